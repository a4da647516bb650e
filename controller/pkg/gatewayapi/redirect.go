package gatewayapi

import (
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"isobar.dev/controller/pkg/ir"
	"isobar.dev/controller/pkg/listener"
)

// redirectsFor settles the port of the rules' redirects for one listener,
// as HTTPRequestRedirectFilter.port says: without a port, a redirect goes
// to the well-known port of its scheme, or without a scheme to the
// listener's port; the Location carries no port when it is the scheme's
// well-known one (80 for http, 443 for https). Envoy strips the request's
// port before routing, so that port is the one Envoy writes. Rules without
// redirects are returned as they are, so caches keyed by route stay warm;
// those with redirects are copied per listener.
func redirectsFor(l *listener.Listener, rules [][]*ir.Route) [][]*ir.Route {
	var out [][]*ir.Route
	for i, rs := range rules {
		for j, r := range rs {
			if r.Redirect == nil {
				continue
			}
			if out == nil {
				out = make([][]*ir.Route, len(rules))
				copy(out, rules)
			}
			if &out[i][0] == &rules[i][0] {
				out[i] = append([]*ir.Route(nil), rules[i]...)
			}
			c := *r
			rd := *r.Redirect
			rd.Port = redirectPort(l, rd)
			c.Redirect = &rd
			out[i][j] = &c
		}
	}
	if out == nil {
		return rules
	}
	return out
}

func redirectPort(l *listener.Listener, rd ir.Redirect) uint32 {
	scheme := rd.Scheme
	if scheme == "" {
		scheme = "http"
		if l.Spec.Protocol == gatewayv1.HTTPSProtocolType {
			scheme = "https"
		}
	}
	port := rd.Port
	switch {
	case port != 0:
	case rd.Scheme == "https":
		port = 443
	case rd.Scheme == "http":
		port = 80
	default:
		port = uint32(l.Spec.Port)
	}
	if scheme == "http" && port == 80 || scheme == "https" && port == 443 {
		return 0
	}
	return port
}
