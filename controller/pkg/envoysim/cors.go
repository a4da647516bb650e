package envoysim

import (
	"fmt"
	"strings"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	corsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/cors/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	"google.golang.org/protobuf/types/known/anypb"
)

const corsFilterName = "envoy.filters.http.cors"

// corsPolicies are the policies Envoy's CORS filter consults for a route,
// most specific first: the route's, then its virtual host's. For each
// setting the first policy that has it wins.
type corsPolicies []*corsv3.CorsPolicy

func corsPoliciesOf(vh *routev3.VirtualHost, rt *routev3.Route) (corsPolicies, error) {
	var out corsPolicies
	for _, cfg := range []map[string]*anypb.Any{rt.GetTypedPerFilterConfig(), vh.GetTypedPerFilterConfig()} {
		a, ok := cfg[corsFilterName]
		if !ok {
			continue
		}
		p, err := unpack[corsv3.CorsPolicy](a, "CORS policy")
		if err != nil {
			return nil, err
		}
		if err := understand(p, "allow_origin_string_match", "allow_methods", "allow_headers", "expose_headers",
			"max_age", "allow_credentials", "forward_not_matching_preflights", "allow_private_network_access"); err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

func (ps corsPolicies) first(get func(*corsv3.CorsPolicy) string) string {
	for _, p := range ps {
		if v := get(p); v != "" {
			return v
		}
	}
	return ""
}

func (ps corsPolicies) origins() []*matcherv3.StringMatcher {
	for _, p := range ps {
		if len(p.GetAllowOriginStringMatch()) > 0 {
			return p.GetAllowOriginStringMatch()
		}
	}
	return nil
}

func (ps corsPolicies) credentials() bool {
	for _, p := range ps {
		if p.GetAllowCredentials() != nil {
			return p.GetAllowCredentials().GetValue()
		}
	}
	return false
}

// cors is what Envoy's CORS filter does with a request (cors_filter.cc).
// A request without an Origin passes untouched. A preflight (OPTIONS with
// Access-Control-Request-Method) from an allowed origin is answered by the
// filter; from another origin it is forwarded unless a policy says
// forward_not_matching_preflights: false. Any other request from an
// allowed origin gets the filter's response headers on whatever answers it
// (encodeHeaders), which the filter's own preflight answer passes through
// too: that is where its expose-headers come from.
func (ps corsPolicies) cors(r *httpRequest) (preflight *Response, headers []Header, err error) {
	origin := r.header("origin")
	if len(ps) == 0 || origin == "" {
		return nil, nil, nil
	}
	allowed := false
	for _, m := range ps.origins() {
		// The filter lets a matcher that matches "*" allow any origin.
		for _, v := range []string{"*", origin} {
			ok, err := stringMatches(m, v)
			if err != nil {
				return nil, nil, fmt.Errorf("CORS origin: %w", err)
			}
			allowed = allowed || ok
		}
	}
	if allowed {
		headers = []Header{{Name: "access-control-allow-origin", Value: origin}}
		if ps.credentials() {
			headers = append(headers, Header{Name: "access-control-allow-credentials", Value: "true"})
		}
		if v := ps.first((*corsv3.CorsPolicy).GetExposeHeaders); v != "" {
			headers = append(headers, Header{Name: "access-control-expose-headers", Value: v})
		}
	}
	requested := r.header("access-control-request-method")
	if r.method != "OPTIONS" || requested == "" || !allowed && ps.forwardNotMatching() {
		return nil, headers, nil
	}
	var pre []Header
	if allowed {
		pre = append(pre, Header{Name: "access-control-allow-origin", Value: origin})
	}
	if ps.credentials() {
		pre = append(pre, Header{Name: "access-control-allow-credentials", Value: "true"})
	}
	// "*" echoes what the preflight asks for.
	if v := ps.first((*corsv3.CorsPolicy).GetAllowMethods); v == "*" {
		pre = append(pre, Header{Name: "access-control-allow-methods", Value: requested})
	} else if v != "" {
		pre = append(pre, Header{Name: "access-control-allow-methods", Value: v})
	}
	if v := ps.first((*corsv3.CorsPolicy).GetAllowHeaders); v == "*" {
		pre = append(pre, Header{Name: "access-control-allow-headers", Value: r.header("access-control-request-headers")})
	} else if v != "" {
		pre = append(pre, Header{Name: "access-control-allow-headers", Value: v})
	}
	if v := ps.first((*corsv3.CorsPolicy).GetMaxAge); v != "" {
		pre = append(pre, Header{Name: "access-control-max-age", Value: v})
	}
	if ps.privateNetwork() && r.header("access-control-request-private-network") == "true" {
		pre = append(pre, Header{Name: "access-control-allow-private-network", Value: "true"})
	}
	return &Response{Status: 200, Headers: withHeaders(pre, headers)}, nil, nil
}

func (ps corsPolicies) privateNetwork() bool {
	for _, p := range ps {
		if p.GetAllowPrivateNetworkAccess() != nil {
			return p.GetAllowPrivateNetworkAccess().GetValue()
		}
	}
	return false
}

func (ps corsPolicies) forwardNotMatching() bool {
	for _, p := range ps {
		if p.GetForwardNotMatchingPreflights() != nil {
			return p.GetForwardNotMatchingPreflights().GetValue()
		}
	}
	return true
}

// withHeaders sets headers over hs, as the filter's setReference does.
func withHeaders(hs, set []Header) []Header {
	out := make([]Header, 0, len(hs)+len(set))
	for _, h := range hs {
		replaced := false
		for _, s := range set {
			replaced = replaced || strings.EqualFold(h.Name, s.Name)
		}
		if !replaced {
			out = append(out, h)
		}
	}
	return append(out, set...)
}
