package httpproxy

import (
	"fmt"
	"net/netip"
	"strings"

	contourv1 "github.com/projectcontour/contour/apis/projectcontour/v1"

	"isobar.dev/controller/pkg/ir"
)

// ipFilter reads an ipAllowPolicy or an ipDenyPolicy as Contour does: not
// both; a bare address is a range of one (/32, /128); Remote filters on
// the client's address as X-Forwarded-For gives it, Peer on the
// connection's. where names the policies' place in messages.
func ipFilter(allow, deny []contourv1.IPFilterPolicy, where string) (*ir.IPFilter, *problem) {
	f := &ir.IPFilter{}
	var list []contourv1.IPFilterPolicy
	switch {
	case len(allow) > 0 && len(deny) > 0:
		return nil, refused(contourv1.ConditionTypeIPFilterError, "IncompatibleIPAddressFilters",
			where+": cannot specify both `ipAllowPolicy` and `ipDenyPolicy`")
	case len(allow) > 0:
		f.Allow, list = true, allow
	case len(deny) > 0:
		list = deny
	default:
		return nil, nil
	}
	for _, p := range list {
		if p.Source != contourv1.IPFilterSourcePeer && p.Source != contourv1.IPFilterSourceRemote {
			return nil, refused(contourv1.ConditionTypeIPFilterError, "InvalidSource",
				fmt.Sprintf("%s: source %q is not Peer or Remote", where, p.Source))
		}
		r, err := cidr(p.CIDR)
		if err != nil {
			return nil, refused(contourv1.ConditionTypeIPFilterError, "InvalidCIDR",
				fmt.Sprintf("%s: %s failed to parse: %v", where, p.CIDR, err))
		}
		f.Rules = append(f.Rules, ir.IPRule{CIDR: r.String(), Remote: p.Source == contourv1.IPFilterSourceRemote})
	}
	return f, nil
}

// cidr parses a range, or an address as the range of that address alone,
// with its address masked, as Go's net.ParseCIDR (Contour's) gives it.
func cidr(s string) (netip.Prefix, error) {
	if !strings.Contains(s, "/") {
		a, err := netip.ParseAddr(s)
		if err != nil {
			return netip.Prefix{}, err
		}
		return netip.PrefixFrom(a, a.BitLen()), nil
	}
	p, err := netip.ParsePrefix(s)
	if err != nil {
		return netip.Prefix{}, err
	}
	return p.Masked(), nil
}
