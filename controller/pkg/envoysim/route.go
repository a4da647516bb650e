package envoysim

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
)

// route picks the virtual host and the first matching route, and carries
// out its action.
func (s *Simulator) route(rc *routev3.RouteConfiguration, r *httpRequest, req Request, filters httpFilters, a *Answer) error {
	if err := understand(rc, "name", "virtual_hosts", "request_headers_to_add", "request_headers_to_remove",
		"response_headers_to_add", "response_headers_to_remove", "most_specific_header_mutations_wins",
		"ignore_port_in_host_matching", "validate_clusters", "max_direct_response_body_size_bytes"); err != nil {
		return err
	}
	host := strings.ToLower(r.authority)
	if rc.GetIgnorePortInHostMatching() {
		host = stripPort(host)
	}
	vh, err := selectVirtualHost(rc.GetVirtualHosts(), host)
	if err != nil {
		return fmt.Errorf("route configuration %s: %w", rc.GetName(), err)
	}
	if vh == nil {
		return s.localReply(a, 404, "no virtual host matches "+r.authority)
	}
	if err := understand(vh, "name", "domains", "routes", "request_headers_to_add", "request_headers_to_remove",
		"response_headers_to_add", "response_headers_to_remove", "typed_per_filter_config", "require_tls", "rate_limits"); err != nil {
		return err
	}
	if vh.GetRequireTls() != routev3.VirtualHost_NONE {
		return errUnsupportedf("virtual host %s: require_tls", vh.GetName())
	}
	a.VirtualHost = vh.GetName()
	for i, rt := range vh.GetRoutes() {
		if err := understand(rt, "name", "match", "route", "redirect", "direct_response", "request_headers_to_add",
			"request_headers_to_remove", "response_headers_to_add", "response_headers_to_remove", "typed_per_filter_config",
			"metadata", "decorator"); err != nil {
			return err
		}
		matched, ok, err := routeMatches(rt.GetMatch(), r)
		if err != nil {
			return fmt.Errorf("virtual host %s, route %d (%s): %w", vh.GetName(), i, rt.GetName(), err)
		}
		if !ok {
			continue
		}
		a.Route, a.RouteIndex = rt.GetName(), i
		if up := upgradeOf(r.headers); up != "" {
			if allowed := upgradesOf(a.Upgrades, rt.GetRoute().GetUpgradeConfigs()); !slices.Contains(allowed, up) {
				// The connection manager cannot make the upgrade's
				// filter chain: Envoy answers 403 (upgrade_failed)
				// before any HTTP filter sees the request.
				a.Upgrades = allowed
				a.Response = &Response{Status: 403, Details: "upgrade_failed: the route does not allow the " + up + " upgrade"}
				return nil
			}
		}
		// The gRPC-Web filter resolves the route before it turns the
		// request into gRPC: the filters after it and the backend see
		// gRPC.
		if a.GRPCWeb != nil {
			a.GRPCWeb.request(r)
		}
		var corsHeaders []Header
		if filters.cors {
			ps, err := corsPoliciesOf(vh, rt)
			if err != nil {
				return fmt.Errorf("virtual host %s, route %d (%s): %w", vh.GetName(), i, rt.GetName(), err)
			}
			a.CORS = len(ps) > 0
			preflight, hs, err := ps.cors(r)
			if err != nil {
				return fmt.Errorf("virtual host %s, route %d (%s): %w", vh.GetName(), i, rt.GetName(), err)
			}
			if preflight != nil {
				a.Response = preflight
				return nil
			}
			corsHeaders = hs
		}
		// The local rate limit and then RBAC come after CORS: a
		// preflight is answered before them.
		if filters.localRateLimit {
			resp, err := s.rateLimited(vh, rt, req.Replay)
			if err != nil {
				return fmt.Errorf("virtual host %s, route %d (%s): %w", vh.GetName(), i, rt.GetName(), err)
			}
			if resp != nil {
				a.Response = resp
				return nil
			}
		}
		if _, ok := rt.GetTypedPerFilterConfig()[rbacFilterName]; ok && !filters.rbac {
			return fmt.Errorf("virtual host %s, route %d (%s): IP rules for an RBAC filter the connection manager does not have: Envoy would ignore them", vh.GetName(), i, rt.GetName())
		}
		if filters.rbac {
			allowed, err := rbacAllows(vh, rt, r.client)
			if err != nil {
				return fmt.Errorf("virtual host %s, route %d (%s): %w", vh.GetName(), i, rt.GetName(), err)
			}
			if !allowed {
				return s.localReply(a, 403, "RBAC: access denied")
			}
		}
		lv := levels{
			route:        mutation{rt.GetRequestHeadersToRemove(), rt.GetRequestHeadersToAdd()},
			vhost:        mutation{vh.GetRequestHeadersToRemove(), vh.GetRequestHeadersToAdd()},
			config:       mutation{rc.GetRequestHeadersToRemove(), rc.GetRequestHeadersToAdd()},
			routeResp:    mutation{rt.GetResponseHeadersToRemove(), rt.GetResponseHeadersToAdd()},
			vhostResp:    mutation{vh.GetResponseHeadersToRemove(), vh.GetResponseHeadersToAdd()},
			configResp:   mutation{rc.GetResponseHeadersToRemove(), rc.GetResponseHeadersToAdd()},
			specificWins: rc.GetMostSpecificHeaderMutationsWins(),
			info:         streamInfo{start: req.StartTime, ja3: req.fingerprints.ja3, ja4: req.fingerprints.ja4},
		}
		if err := checkLuaConfig(vh, rt, filters.lua); err != nil {
			return fmt.Errorf("virtual host %s, route %d (%s): %w", vh.GetName(), i, rt.GetName(), err)
		}
		if _, ok := rt.GetTypedPerFilterConfig()[statefulSessionFilterName]; ok && !filters.session {
			return errSessionWithoutFilter(vh, i, rt)
		}
		// JWT verification comes after RBAC, before external
		// authorization: a request without a token is answered here; the
		// data plane verifies one it has first (see JWTCheck).
		var missing bool
		if a.JWT, missing, err = s.jwtOf(filters.jwt, vh, rt, r); err != nil {
			return fmt.Errorf("virtual host %s, route %d (%s): %w", vh.GetName(), i, rt.GetName(), err)
		}
		if missing {
			// Envoy's answer: there is nothing to verify.
			a.Response, a.JWT = a.JWT.missingAnswer(), nil
			return nil
		}
		// External authorization comes after JWT verification: the data
		// plane asks the server before it acts on the answer (see
		// Authorization).
		for name := range rt.GetTypedPerFilterConfig() {
			if isExtAuthzFilter(name) && !slices.ContainsFunc(filters.extAuthz, func(f extAuthzInstance) bool { return f.name == name }) {
				return fmt.Errorf("virtual host %s, route %d (%s): an authorization server for an ext_authz filter the connection manager does not have: Envoy would ignore it", vh.GetName(), i, rt.GetName())
			}
		}
		if a.Authorization, err = s.authorizationOf(vh, rt, r, filters.extAuthz); err != nil {
			return fmt.Errorf("virtual host %s, route %d (%s): %w", vh.GetName(), i, rt.GetName(), err)
		}
		if _, ok := rt.GetTypedPerFilterConfig()[globalRateLimitFilterName]; ok && filters.rateLimit == nil {
			return fmt.Errorf("virtual host %s, route %d (%s): a rate limit configuration for a filter the connection manager does not have: Envoy would ignore it", vh.GetName(), i, rt.GetName())
		}
		// The rate limit filter asks only about requests a route
		// forwards (Envoy's filter skips routes without a route entry).
		if a.RateLimit, err = s.rateLimitOf(filters.rateLimit, vh, rt, rt.GetRoute(), r); err != nil {
			return fmt.Errorf("virtual host %s, route %d (%s): %w", vh.GetName(), i, rt.GetName(), err)
		}
		switch act := rt.GetAction().(type) {
		case *routev3.Route_Route:
			err = s.forward(act.Route, rt.GetMatch(), matched, r, req, lv, a)
			if err == nil && filters.session {
				err = keepSession(vh, rt, r, a)
			}
		case *routev3.Route_Redirect:
			err = s.redirect(act.Redirect, rt.GetMatch(), matched, r, lv, a)
		case *routev3.Route_DirectResponse:
			err = s.direct(act.DirectResponse, req, lv, a)
		default:
			return errUnsupportedf("route %s: action %T", rt.GetName(), act)
		}
		if err != nil || corsHeaders == nil {
			return err
		}
		// The CORS filter's encodeHeaders runs after the router's
		// response header mutations, on every answer.
		if a.Response != nil {
			a.Response.Headers = withHeaders(a.Response.Headers, corsHeaders)
		}
		for i := range a.Backends {
			a.Backends[i].ResponseHeaders = withHeaders(a.Backends[i].ResponseHeaders, corsHeaders)
		}
		return nil
	}
	return s.localReply(a, 404, "no route of virtual host "+vh.GetName()+" matches")
}

// localReply is an answer Envoy makes up without a route (404s).
func (s *Simulator) localReply(a *Answer, status int, why string) error {
	a.Response = &Response{Status: status, Body: why}
	return nil
}

// upgradeOf is the protocol an HTTP/1.1 request asks to upgrade to (its
// Upgrade header, with "upgrade" among its Connection tokens), lower case;
// "" for none. Envoy's HTTP/1 codec drops an h2c upgrade and serves the
// request as HTTP/1.1.
func upgradeOf(hs []Header) string {
	up := strings.ToLower(valueOf(hs, "upgrade"))
	if up == "" || up == "h2c" {
		return ""
	}
	for _, token := range strings.Split(valueOf(hs, "connection"), ",") {
		if strings.EqualFold(strings.TrimSpace(token), "upgrade") {
			return up
		}
	}
	return ""
}

// upgradesOf are the upgrades a route allows: the connection manager's
// (managers), as the route's upgrade_configs enable or disable them.
func upgradesOf(managers []string, route []*routev3.RouteAction_UpgradeConfig) []string {
	out := slices.Clone(managers)
	for _, u := range route {
		if u.GetEnabled() == nil || u.GetEnabled().GetValue() {
			if !slices.Contains(out, u.GetUpgradeType()) {
				out = append(out, u.GetUpgradeType())
			}
		} else {
			out = slices.DeleteFunc(out, func(t string) bool { return t == u.GetUpgradeType() })
		}
	}
	return out
}

// selectVirtualHost follows route_components.proto (VirtualHost.domains):
// an exact domain first, then suffix wildcards ("*.foo.com",
// "*-bar.foo.com"), then prefix wildcards ("foo.*"), longest first, then
// "*". Wildcards match at least one character. Domains compare case
// insensitively; a domain in two virtual hosts makes Envoy reject the
// configuration.
func selectVirtualHost(vhs []*routev3.VirtualHost, host string) (*routev3.VirtualHost, error) {
	const (
		none = iota
		any
		prefixWildcard
		suffixWildcard
		exact
	)
	var best *routev3.VirtualHost
	bestKind, bestLen := none, -1
	seen := map[string]string{}
	for _, vh := range vhs {
		for _, d := range vh.GetDomains() {
			d = strings.ToLower(d)
			if other, dup := seen[d]; dup {
				return nil, fmt.Errorf("domain %q is in virtual hosts %s and %s: Envoy rejects the route configuration", d, other, vh.GetName())
			}
			seen[d] = vh.GetName()
			kind := none
			switch {
			case d == "*":
				kind = any
			case d == host:
				kind = exact
			case strings.HasPrefix(d, "*") && len(host) > len(d)-1 && strings.HasSuffix(host, d[1:]):
				kind = suffixWildcard
			case strings.HasSuffix(d, "*") && len(host) > len(d)-1 && strings.HasPrefix(host, d[:len(d)-1]):
				kind = prefixWildcard
			}
			if kind > bestKind || kind == bestKind && kind != none && len(d) > bestLen {
				best, bestKind, bestLen = vh, kind, len(d)
			}
		}
	}
	return best, nil
}

// levels are the header mutations of a route's levels.
type levels struct {
	route, vhost, config             mutation
	routeResp, vhostResp, configResp mutation
	specificWins                     bool
	// info is what command operators read of the request's stream.
	info streamInfo
}

// request applies the request header mutations: the weighted cluster's
// (when any) first, then route, virtual host and route configuration, so
// that the least specific level has the last word; most_specific_header_
// mutations_wins reverses the order ("Custom request/response headers").
func (lv levels) request(cluster mutation, h []Header) ([]Header, error) {
	order := []mutation{cluster, lv.route, lv.vhost, lv.config}
	if lv.specificWins {
		order = []mutation{lv.config, lv.vhost, lv.route, cluster}
	}
	return applyAll(order, h, lv.info)
}

// response applies the response header mutations in the same order.
func (lv levels) response(cluster mutation, h []Header) ([]Header, error) {
	order := []mutation{cluster, lv.routeResp, lv.vhostResp, lv.configResp}
	if lv.specificWins {
		order = []mutation{lv.configResp, lv.vhostResp, lv.routeResp, cluster}
	}
	return applyAll(order, h, lv.info)
}

func applyAll(ms []mutation, h []Header, info streamInfo) ([]Header, error) {
	var err error
	for _, m := range ms {
		if h, err = m.apply(h, info); err != nil {
			return nil, err
		}
	}
	return h, nil
}

// statusOf is a redirect response code's number.
func statusOf(c routev3.RedirectAction_RedirectResponseCode) int {
	switch c {
	case routev3.RedirectAction_FOUND:
		return 302
	case routev3.RedirectAction_SEE_OTHER:
		return 303
	case routev3.RedirectAction_TEMPORARY_REDIRECT:
		return 307
	case routev3.RedirectAction_PERMANENT_REDIRECT:
		return 308
	}
	return 301
}

func itoa(n int) string { return strconv.Itoa(n) }
