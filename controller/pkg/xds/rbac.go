package xds

import (
	"net/netip"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	rbacconfigv3 "github.com/envoyproxy/go-control-plane/envoy/config/rbac/v3"
	rbacv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/rbac/v3"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"isobar.dev/controller/pkg/ir"
)

// rbacFilter is Envoy's RBAC filter. Every connection manager has it,
// without rules of its own (it lets everything in); a route with an IP
// filter gives it rules for that route alone.
const rbacFilter = "envoy.filters.http.rbac"

// ipFilter is an IP filter as the RBAC filter's per-route configuration:
// one policy, for any request, whose principals are the filter's ranges;
// an allow list lets in what it matches, a deny list keeps it out.
// remote_ip is the client address the connection manager trusts (from
// X-Forwarded-For as far as xff_num_trusted_hops says), direct_remote_ip
// the connection's peer. source_ip is not used: it follows PROXY protocol
// but not X-Forwarded-For.
func ipFilter(f *ir.IPFilter) *rbacv3.RBACPerRoute {
	action := rbacconfigv3.RBAC_DENY
	if f.Allow {
		action = rbacconfigv3.RBAC_ALLOW
	}
	principals := make([]*rbacconfigv3.Principal, 0, len(f.Rules))
	for _, r := range f.Rules {
		p := netip.MustParsePrefix(r.CIDR)
		cidr := &corev3.CidrRange{AddressPrefix: p.Addr().String(), PrefixLen: wrapperspb.UInt32(uint32(p.Bits()))}
		if r.Remote {
			principals = append(principals, &rbacconfigv3.Principal{Identifier: &rbacconfigv3.Principal_RemoteIp{RemoteIp: cidr}})
		} else {
			principals = append(principals, &rbacconfigv3.Principal{Identifier: &rbacconfigv3.Principal_DirectRemoteIp{DirectRemoteIp: cidr}})
		}
	}
	return &rbacv3.RBACPerRoute{Rbac: &rbacv3.RBAC{Rules: &rbacconfigv3.RBAC{
		Action: action,
		Policies: map[string]*rbacconfigv3.Policy{"ip-rules": {
			Permissions: []*rbacconfigv3.Permission{{Rule: &rbacconfigv3.Permission_Any{Any: true}}},
			Principals:  principals,
		}},
	}}}
}
