package envoysim

import (
	"fmt"
	"net/netip"
	"strings"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	rbacconfigv3 "github.com/envoyproxy/go-control-plane/envoy/config/rbac/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	rbacv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/rbac/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
)

const rbacFilterName = "envoy.filters.http.rbac"

// rbacFilter checks the RBAC filter's own configuration: the simulator
// models one without rules of its own (it lets everything in), which
// routes' per-filter configurations then give rules.
func rbacFilter(hf *hcmv3.HttpFilter) error {
	cfg, err := unpack[rbacv3.RBAC](hf.GetTypedConfig(), "RBAC filter")
	if err != nil {
		return err
	}
	return understand(cfg)
}

// clientAddresses are the addresses RBAC principals match: the
// connection's peer (direct_remote_ip) and the client's address as the
// connection manager trusts it (remote_ip). With use_remote_address and
// xff_num_trusted_hops N > 0 that is the Nth address from the right of the
// X-Forwarded-For the request came with, or the peer when it has fewer;
// with N = 0 it is the peer.
type clientAddresses struct {
	peer, remote netip.Addr
	err          error
}

func clientAddressesOf(hcm *hcmv3.HttpConnectionManager, req Request, headers []Header) clientAddresses {
	if req.ClientAddress == "" {
		return clientAddresses{err: fmt.Errorf("the request has no client address, which an IP filter needs")}
	}
	peer, err := netip.ParseAddr(req.ClientAddress)
	if err != nil {
		return clientAddresses{err: fmt.Errorf("client address: %w", err)}
	}
	peer = peer.Unmap()
	out := clientAddresses{peer: peer, remote: peer}
	if !hcm.GetUseRemoteAddress().GetValue() {
		out.err = errUnsupportedf("use_remote_address false: the trusted client address would come from X-Forwarded-For alone")
		return out
	}
	n := int(hcm.GetXffNumTrustedHops())
	if n == 0 {
		return out
	}
	var xff []string
	for _, h := range headers {
		if h.Name == "x-forwarded-for" {
			for _, a := range strings.Split(h.Value, ",") {
				xff = append(xff, strings.TrimSpace(a))
			}
		}
	}
	if len(xff) < n {
		return out
	}
	// An address Envoy cannot parse leaves the peer.
	if a, err := netip.ParseAddr(xff[len(xff)-n]); err == nil {
		out.remote = a.Unmap()
	}
	return out
}

// rbacAllows applies the RBAC per-route configuration of a route, or else
// of its virtual host (Envoy takes the most specific), to a request; none
// lets it in.
func rbacAllows(vh *routev3.VirtualHost, rt *routev3.Route, c clientAddresses) (bool, error) {
	cfg := perFilterConfig(vh, rt, rbacFilterName)
	if cfg == nil {
		return true, nil
	}
	per, err := unpack[rbacv3.RBACPerRoute](cfg, "RBAC per-route configuration")
	if err != nil {
		return false, err
	}
	if err := understand(per, "rbac"); err != nil {
		return false, err
	}
	if per.GetRbac() == nil {
		return true, nil
	}
	if err := understand(per.GetRbac(), "rules"); err != nil {
		return false, err
	}
	rules := per.GetRbac().GetRules()
	if rules == nil {
		return true, nil
	}
	if err := understand(rules, "action", "policies"); err != nil {
		return false, err
	}
	matched := false
	for name, p := range rules.GetPolicies() {
		ok, err := policyMatches(p, c)
		if err != nil {
			return false, fmt.Errorf("RBAC policy %s: %w", name, err)
		}
		matched = matched || ok
	}
	switch rules.GetAction() {
	case rbacconfigv3.RBAC_ALLOW:
		return matched, nil
	case rbacconfigv3.RBAC_DENY:
		return !matched, nil
	default:
		return false, errUnsupportedf("RBAC action %v", rules.GetAction())
	}
}

// policyMatches reports whether a request matches a policy: one of its
// permissions (the simulator models "any") and one of its principals
// (address ranges of the peer or of the trusted client address).
func policyMatches(p *rbacconfigv3.Policy, c clientAddresses) (bool, error) {
	if err := understand(p, "permissions", "principals"); err != nil {
		return false, err
	}
	permitted := false
	for _, perm := range p.GetPermissions() {
		if _, ok := perm.GetRule().(*rbacconfigv3.Permission_Any); !ok || !perm.GetAny() {
			return false, errUnsupportedf("RBAC permission %v", perm)
		}
		permitted = true
	}
	if !permitted {
		return false, nil
	}
	for _, pr := range p.GetPrincipals() {
		var r *corev3.CidrRange
		var addr netip.Addr
		switch id := pr.GetIdentifier().(type) {
		case *rbacconfigv3.Principal_DirectRemoteIp:
			r, addr = id.DirectRemoteIp, c.peer
		case *rbacconfigv3.Principal_RemoteIp:
			r, addr = id.RemoteIp, c.remote
		default:
			return false, errUnsupportedf("RBAC principal %T", id)
		}
		if c.err != nil {
			return false, c.err
		}
		if ok, err := inRange(r, addr); err != nil || ok {
			return ok, err
		}
	}
	return false, nil
}

// inRange reports whether addr is in a range.
func inRange(r *corev3.CidrRange, addr netip.Addr) (bool, error) {
	prefix, bits := r.GetAddressPrefix(), r.GetPrefixLen().GetValue()
	a, err := netip.ParseAddr(prefix)
	if err != nil {
		return false, fmt.Errorf("CIDR range %s: %w", prefix, err)
	}
	if int(bits) > a.BitLen() {
		return false, fmt.Errorf("CIDR range %s/%d: prefix longer than the address", prefix, bits)
	}
	p := netip.PrefixFrom(a, int(bits)).Masked()
	return p.Contains(addr), nil
}
