package httpproxy

import (
	"fmt"
	"slices"
	"strings"

	contourv1 "github.com/projectcontour/contour/apis/projectcontour/v1"
	"k8s.io/apimachinery/pkg/types"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"isobar.dev/api/ingressclass"
	"isobar.dev/api/refgrant"
	"isobar.dev/controller/pkg/backend"
	"isobar.dev/controller/pkg/condition"
	"isobar.dev/controller/pkg/env"
	"isobar.dev/controller/pkg/hostname"
	"isobar.dev/controller/pkg/ir"
	"isobar.dev/controller/pkg/routerule"
	"isobar.dev/controller/pkg/validate"
)

// Tree is what a root proxy and the proxies it includes serve.
type Tree struct {
	FQDN string
	// HTTP are the virtual host's routes on ingress-http: each route, or
	// for a TLS virtual host a 301 to HTTPS unless the route permits
	// insecure requests.
	HTTP []*ir.Route
	// HTTPS are the routes on the virtual host's TLS listener; none
	// without TLS.
	HTTPS []*ir.Route
	// Clusters are the clusters the routes use.
	Clusters []backend.ClusterSpec
	// Statuses are those of every proxy the tree reached, the root's
	// first, in the order reached.
	Statuses []ProxyStatus
	// TLS is what the virtual host's filter chain asks beyond its
	// certificate; nil for nothing.
	TLS *ir.ChainTLS
	// Policy is what the virtual host asks of all its routes; nil for
	// nothing.
	Policy *ir.VirtualHostPolicy
	// JWTProviders are those whose tokens the HTTPS routes may require.
	JWTProviders []ir.JWTProvider
}

// HTTPSPolicy is what the virtual host asks of its routes on its TLS
// listener: Policy, and the JWT providers.
func (t *Tree) HTTPSPolicy() *ir.VirtualHostPolicy {
	if len(t.JWTProviders) == 0 {
		return t.Policy
	}
	var p ir.VirtualHostPolicy
	if t.Policy != nil {
		p = *t.Policy
	}
	p.JWTProviders = t.JWTProviders
	return &p
}

// ProxyStatus is the status of one proxy of a tree.
type ProxyStatus struct {
	Proxy  types.NamespacedName
	Status *Status
	proxy  *contourv1.HTTPProxy
}

// Root translates a root proxy's tree for a Gateway whose ingress-https
// is on httpsPort (0 when it has none), reading the proxies it includes
// and the Services of their routes through e.
func Root(e env.Env, names *backend.Names, root *contourv1.HTTPProxy, opts Options, httpsPort int32) *Tree {
	w := &walk{e: e, names: names, opts: opts, root: root, tree: &Tree{}}
	st := w.status(root)
	vh := root.Spec.VirtualHost
	w.tree.FQDN = vh.Fqdn
	switch {
	case strings.TrimSpace(vh.Fqdn) == "":
		st.Valid.AddError(contourv1.ConditionTypeVirtualHostError, "FQDNNotSpecified", "Spec.VirtualHost.Fqdn must be specified")
		return w.tree
	case validate.Hostname(vh.Fqdn, true) != nil:
		st.Valid.AddErrorf(contourv1.ConditionTypeVirtualHostError, "FQDNNotValid", "Spec.VirtualHost.Fqdn %q is not a valid DNS name", vh.Fqdn)
		return w.tree
	case len(opts.RootNamespaces) > 0 && !slices.Contains(opts.RootNamespaces, root.Namespace):
		st.Valid.AddError(contourv1.ConditionTypeRootNamespaceError, "RootProxyNotAllowedInNamespace", "root HTTPProxy cannot be defined in this namespace")
		return w.tree
	case len(root.Spec.Routes) == 0 && len(root.Spec.Includes) == 0 && root.Spec.TCPProxy == nil:
		st.Valid.AddError(contourv1.ConditionTypeSpecError, "NothingDefined", "HTTPProxy.Spec must have at least one Route, Include, or a TCPProxy")
		return w.tree
	}
	if f := refuseVirtualHost(vh); f != "" {
		st.Valid.AddErrorf(contourv1.ConditionTypeVirtualHostError, "NotSupported", "virtualhost.%s is not supported yet", f)
		return w.tree
	}
	cors, bad := corsPolicy(vh.CORSPolicy)
	if bad != nil {
		st.Valid.AddError(bad.Type, bad.Reason, bad.Message)
		return w.tree
	}
	ips, bad := ipFilter(vh.IPAllowFilterPolicy, vh.IPDenyFilterPolicy, "Spec.VirtualHost")
	if bad != nil {
		st.Valid.AddError(bad.Type, bad.Reason, bad.Message)
		if bad.Reason == "InvalidCIDR" {
			// Contour reports the policy as well as the range.
			st.Valid.AddErrorf(contourv1.ConditionTypeIPFilterError, "IPFilterPolicyNotValid",
				"Spec.VirtualHost.IPAllowFilterPolicy or Spec.VirtualHost.IPDenyFilterPolicy is invalid: %s", bad.Message)
		}
		return w.tree
	}
	limit, bad := localRateLimit(vh.RateLimitPolicy, contourv1.ConditionTypeVirtualHostError, "Spec.VirtualHost", contourVars{namespace: root.Namespace})
	if bad != nil {
		st.Valid.AddError(bad.Type, bad.Reason, bad.Message)
		return w.tree
	}
	global, bad := w.virtualHostGlobalRateLimits(root)
	if bad != nil {
		st.Valid.AddError(bad.Type, bad.Reason, bad.Message)
		return w.tree
	}
	if limit != nil || global != nil {
		w.tree.Policy = &ir.VirtualHostPolicy{LocalRateLimit: limit, GlobalRateLimits: global}
	}
	tls := vh.TLS != nil
	if tls && !w.virtualHostTLS(root, httpsPort) {
		return w.tree
	}
	auth, bad := w.authorization(root)
	if bad != nil {
		st.Valid.AddError(bad.Type, bad.Reason, bad.Message)
		return w.tree
	}
	if w.jwt, bad = w.jwtProviders(root); bad != nil {
		st.Valid.AddError(bad.Type, bad.Reason, bad.Message)
		return w.tree
	}
	if w.jwt != nil {
		w.tree.JWTProviders = w.jwt.providers
	}
	if root.Spec.TCPProxy != nil {
		if !tls {
			st.Valid.AddError(contourv1.ConditionTypeTCPProxyError, "TLSMustBeConfigured", "Spec.TCPProxy requires that either Spec.TLS.Passthrough or Spec.TLS.SecretName be set")
			return w.tree
		}
		dest, bad := w.tcpProxy(root)
		if bad != nil {
			st.Valid.AddError(bad.Type, bad.Reason, bad.Message)
			return w.tree
		}
		if w.tree.TLS == nil {
			w.tree.TLS = &ir.ChainTLS{}
		}
		w.tree.TLS.TCP = dest
	}
	// The virtual host's CORS policy is each route's, redirects too, and
	// so is its IP filter where a route has none of its own (Envoy takes
	// a route's over its virtual host's).
	//
	// A wildcard virtual host serves one label in front of its domain, as
	// Contour's does: every route also matches the :authority.
	var oneLabel []ir.StringMatch
	if strings.HasPrefix(vh.Fqdn, "*.") {
		oneLabel = []ir.StringMatch{{Name: ":authority", Value: hostname.OneLabelAuthority(vh.Fqdn), Regex: true}}
	}
	defer func() {
		seen := map[*ir.Route]bool{}
		for _, r := range slices.Concat(w.tree.HTTP, w.tree.HTTPS) {
			if seen[r] {
				continue
			}
			seen[r] = true
			if cors != nil {
				r.CORS = cors
			}
			if r.IPFilter == nil {
				r.IPFilter = ips
			}
			if oneLabel != nil {
				r.Match.Headers = slices.Concat(r.Match.Headers, oneLabel)
			}
		}
	}()
	for _, r := range w.routes(nil, root, nil, nil) {
		// With a tcpproxy the TLS virtual host forwards connections, not
		// requests.
		if tls && root.Spec.TCPProxy == nil {
			w.tree.HTTPS = append(w.tree.HTTPS, auth.secure(r))
		}
		if !tls || r.insecure && !opts.DisablePermitInsecure {
			w.tree.HTTP = append(w.tree.HTTP, insecure(r.route))
			continue
		}
		section := gatewayv1.SectionName("redirect")
		if r.section != "" {
			section = r.section + "-redirect"
		}
		w.tree.HTTP = append(w.tree.HTTP, &ir.Route{
			Name:     routerule.RouteName("httpproxy", r.proxy.Namespace, r.proxy.Name, r.index, &section, r.match),
			Match:    r.route.Match,
			Redirect: &ir.Redirect{Scheme: "https", Port: uint32(httpsPort), StatusCode: 301},
			IPFilter: r.route.IPFilter,
			// Checked or not as the route it redirects to, as in Contour.
			ExtAuthPolicy: r.route.ExtAuthPolicy,
		})
	}
	return w.tree
}

// TLSSecret returns the namespace and name of the Secret of a root's
// virtualhost.tls.secretName: "name" in the root's namespace, or
// "namespace/name" in another, which a TLSCertificateDelegation there
// must allow (the listener's certificate check asks).
func TLSSecret(root *contourv1.HTTPProxy) (string, string, error) {
	secret := root.Spec.VirtualHost.TLS.SecretName
	ns, name := refgrant.ProxySecret(root.Namespace, secret)
	if ns == "" || name == "" || strings.Contains(name, "/") {
		return "", "", fmt.Errorf("Spec.VirtualHost.TLS.SecretName %q must be a name or namespace/name", secret)
	}
	return ns, name, nil
}

// walk translates one tree.
type walk struct {
	e     env.Env
	names *backend.Names
	opts  Options
	root  *contourv1.HTTPProxy
	tree  *Tree
	// statuses index the tree's statuses by proxy, once it has many.
	statuses map[*contourv1.HTTPProxy]*Status
	// rewrites counts the routes that replace a path prefix: without
	// any, no level of the tree needs its prefixes expanded.
	rewrites int
	// rateLimitChecked are the proxies whose use of the rate limit
	// service was checked.
	rateLimitChecked map[*contourv1.HTTPProxy]bool
	// jwt are the root's JWT providers; nil for none.
	jwt *jwtProviders
}

// insecure is route r as the plain HTTP listener serves it: Contour
// verifies tokens on the TLS virtual host only.
func insecure(r *ir.Route) *ir.Route {
	if r.JWTProvider == "" {
		return r
	}
	cp := *r
	cp.JWTProvider = ""
	return &cp
}

// route is a translated route and whether it may be served over HTTP on
// a TLS virtual host.
type route struct {
	route    *ir.Route
	insecure bool
	// proxy, index, section and match are where the route is written,
	// which names it and its redirect to HTTPS.
	proxy   *contourv1.HTTPProxy
	index   int
	section gatewayv1.SectionName
	match   int
}

// status returns the status of proxy p in the tree. Most trees have a
// few proxies, searched in order; a large one is indexed.
func (w *walk) status(p *contourv1.HTTPProxy) *Status {
	if w.statuses != nil {
		if s, ok := w.statuses[p]; ok {
			return s
		}
	} else {
		for _, ps := range w.tree.Statuses {
			if ps.proxy == p {
				return ps.Status
			}
		}
	}
	s := newStatus(p)
	w.tree.Statuses = append(w.tree.Statuses, ProxyStatus{Proxy: types.NamespacedName{Namespace: p.Namespace, Name: p.Name}, Status: s, proxy: p})
	switch {
	case w.statuses != nil:
		w.statuses[p] = s
	case len(w.tree.Statuses) > 16:
		w.statuses = make(map[*contourv1.HTTPProxy]*Status, 2*len(w.tree.Statuses))
		for _, ps := range w.tree.Statuses {
			w.statuses[ps.proxy] = ps.Status
		}
	}
	return s
}

// routes appends to out the routes of proxy p and of the proxies it
// includes, under the conditions of the includes that led to it (conds);
// visited are the proxies on the way there. A route that cannot be served
// as written drops every route of p, as Contour does.
func (w *walk) routes(out []route, p *contourv1.HTTPProxy, conds []contourv1.MatchCondition, visited []*contourv1.HTTPProxy) []route {
	st := w.status(p)
	if slices.Contains(visited, p) {
		var path []string
		for _, v := range append(visited, p) {
			path = append(path, v.Namespace+"/"+v.Name)
		}
		st.Valid.AddErrorf(contourv1.ConditionTypeIncludeError, "IncludeCreatesCycle", "include creates an include cycle: %s", strings.Join(path, " -> "))
		return out
	}
	visited = append(visited, p)
	if f := refuseSpec(&p.Spec); f != "" {
		st.Valid.AddErrorf(contourv1.ConditionTypeSpecError, "NotSupported", "spec.%s is not supported yet", f)
		return out
	}
	start := len(out)
	var seenBuf [8]int
	seen := seenBuf[:0] // the includes so far that are not duplicates
	for i := range p.Spec.Includes {
		inc := &p.Spec.Includes[i]
		ns := inc.Namespace
		if ns == "" {
			ns = p.Namespace
		}
		if err := includeConditionsValid(inc.Conditions); err != nil {
			st.Valid.AddErrorf(contourv1.ConditionTypeIncludeError, "PathMatchConditionsNotValid", "include: %s", err)
			continue
		}
		if err := headerConditionsValid(inc.Conditions); err != nil {
			st.Valid.AddError(contourv1.ConditionTypeRouteError, "HeaderMatchConditionsNotValid", err.Error())
			continue
		}
		if err := queryConditionsValid(inc.Conditions); err != nil {
			st.Valid.AddError(contourv1.ConditionTypeRouteError, "QueryParameterMatchConditionsNotValid", err.Error())
			continue
		}
		if slices.ContainsFunc(seen, func(j int) bool { return sameConditions(p.Spec.Includes[j].Conditions, inc.Conditions) }) {
			st.Valid.AddError(contourv1.ConditionTypeIncludeError, "DuplicateMatchConditions", "duplicate conditions defined on an include")
			continue
		}
		seen = append(seen, i)
		child, ok := w.e.HTTPProxy(ns, inc.Name)
		all := append(slices.Clip(conds), inc.Conditions...)
		switch {
		case !ok:
			st.Valid.AddErrorf(contourv1.ConditionTypeIncludeError, "IncludeNotFound", "include %s/%s not found", ns, inc.Name)
			out = badGateway(out, p, i, all, len(inc.Conditions) > 0)
		case w.opts.Serves != nil && !w.opts.Serves(child):
			// It exists, but its class is not this Gateway's: Contour,
			// which sees only its class's proxies, says not found.
			st.Valid.AddErrorf(contourv1.ConditionTypeIncludeError, "IncludeNotFound", "include %s/%s %s", ns, inc.Name, notServed(child))
			out = badGateway(out, p, i, all, len(inc.Conditions) > 0)
		case child.Spec.VirtualHost != nil:
			st.Valid.AddErrorf(contourv1.ConditionTypeIncludeError, "RootIncludesRoot", "root httpproxy cannot include another root httpproxy (%s/%s)", child.Namespace, child.Name)
			out = badGateway(out, p, i, all, len(inc.Conditions) > 0)
		default:
			out = w.routes(out, child, all, visited)
		}
	}
	for i := range p.Spec.Routes {
		all := conds
		if rc := p.Spec.Routes[i].Conditions; len(rc) > 0 {
			all = append(slices.Clip(conds), rc...)
		}
		r, err := w.route(p, i, all)
		if err != nil {
			st.Valid.AddError(err.Type, err.Reason, err.Message)
			return out[:start]
		}
		out = append(out, r)
	}
	if w.rewrites > 0 {
		out = expandPrefixRewrites(out, start)
	}
	return out
}

// notServed says why the Gateway does not serve an HTTPProxy that exists.
func notServed(p *contourv1.HTTPProxy) string {
	if c := ingressclass.ProxyClass(p); c != "" {
		return fmt.Sprintf("exists, but is of ingress class %q, which this Gateway does not serve", c)
	}
	return "exists, but names no ingress class, and the default class is not one this Gateway serves"
}

// badGateway appends the route of include i of p, whose proxy cannot be
// included, under all its conditions: its requests get 502, as Contour
// answers them. An include without conditions adds none.
func badGateway(out []route, p *contourv1.HTTPProxy, i int, all []contourv1.MatchCondition, conditioned bool) []route {
	if !conditioned {
		return out
	}
	m, err := match(all)
	if err != nil {
		return out
	}
	return append(out, route{route: &ir.Route{
		Name:  routerule.RouteName("httpproxy", p.Namespace, p.Name, i, ptr[gatewayv1.SectionName]("include"), 0),
		Match: m, DirectResponse: &ir.DirectResponse{Status: 502},
	}, proxy: p, index: i, section: "include"})
}

// problem is why a route cannot be served, as Contour reports it: the
// one problem type, with Contour's sub-condition type and reason.
type problem = condition.Problem[string, string]

func refused(typ, reason, message string) *problem {
	return &problem{Type: typ, Reason: reason, Message: message}
}

// route translates route i of proxy p under conds, its own conditions
// last.
func (w *walk) route(p *contourv1.HTTPProxy, i int, conds []contourv1.MatchCondition) (route, *problem) {
	r := &p.Spec.Routes[i]
	if f := refuseRoute(r); f != "" {
		return route{}, refused(contourv1.ConditionTypeRouteError, "NotSupported", fmt.Sprintf("routes[%d].%s is not supported yet", i, f))
	}
	actions := 0
	for _, set := range []bool{len(r.Services) > 0, r.RequestRedirectPolicy != nil, r.DirectResponsePolicy != nil} {
		if set {
			actions++
		}
	}
	if actions != 1 {
		return route{}, refused(contourv1.ConditionTypeRouteError, "RouteActionCountNotValid", "must set exactly one of route.services or route.requestRedirectPolicy or route.directResponsePolicy")
	}
	if err := pathConditionsValid(r.Conditions); err != nil {
		return route{}, refused(contourv1.ConditionTypeRouteError, "PathMatchConditionsNotValid", "route: "+err.Error())
	}
	if err := headerConditionsValid(conds); err != nil {
		return route{}, refused(contourv1.ConditionTypeRouteError, "HeaderMatchConditionsNotValid", err.Error())
	}
	if err := queryConditionsValid(conds); err != nil {
		return route{}, refused(contourv1.ConditionTypeRouteError, "QueryParameterMatchConditionsNotValid", err.Error())
	}
	m, err := match(conds)
	if err != nil {
		return route{}, refused(contourv1.ConditionTypeRouteError, "HeaderMatchConditionsNotValid", err.Error())
	}
	// Contour allows websocket upgrades only on the routes that ask.
	out := &ir.Route{Name: routerule.RouteName("httpproxy", p.Namespace, p.Name, i, nil, 0), Match: m, WebsocketsDisabled: !r.EnableWebsockets}
	var host ir.Rewrite
	var bad *problem
	if out.IPFilter, bad = ipFilter(r.IPAllowFilterPolicy, r.IPDenyFilterPolicy, fmt.Sprintf("routes[%d]", i)); bad != nil {
		return route{}, bad
	}
	vars := contourVars{namespace: p.Namespace}
	if out.LocalRateLimit, bad = localRateLimit(r.RateLimitPolicy, contourv1.ConditionTypeRouteError, fmt.Sprintf("routes[%d]", i), vars); bad != nil {
		return route{}, bad
	}
	if bad = w.routeGlobalRateLimits(p, i, r.RateLimitPolicy, out); bad != nil {
		return route{}, bad
	}
	if out.RequestHeaders, host, bad = headers(r.RequestHeadersPolicy, "requestHeadersPolicy", contourv1.ConditionTypeRouteError, "RequestHeadersPolicyInvalid", anyHost, vars); bad != nil {
		return route{}, bad
	}
	if host != (ir.Rewrite{}) {
		out.Rewrite = &host
	}
	// ResponseHeaderPolicyInvalid, singular, is how Contour spells it here.
	if out.ResponseHeaders, _, bad = headers(r.ResponseHeadersPolicy, "responseHeadersPolicy", contourv1.ConditionTypeRouteError, "ResponseHeaderPolicyInvalid", noHost, vars); bad != nil {
		return route{}, bad
	}
	idleConnection, bad := timeouts(out, r.TimeoutPolicy)
	if bad != nil {
		return route{}, bad
	}
	if reason, message := retries(out, r.RetryPolicy); reason != "" {
		w.warn(p, i, reason, message)
	}
	lb, hashes, lbWarnings := loadBalancer(r.LoadBalancerPolicy)
	for _, msg := range lbWarnings {
		w.warn(p, i, "LoadBalancerPolicyIgnored", msg)
	}
	out.HashPolicies = hashes
	if r.AuthPolicy != nil && w.root.Spec.VirtualHost.Authorization == nil && w.opts.GlobalExtAuth == nil {
		w.warn(p, i, "PolicyHasNoEffect", "authPolicy takes effect only under a root whose virtualhost has authorization, or with the profile's globalExtAuth")
	}
	if out.JWTProvider, bad = w.jwtRequirement(i, r); bad != nil {
		return route{}, bad
	}
	if r.JWTVerificationPolicy != nil && w.jwt == nil {
		w.warn(p, i, "PolicyHasNoEffect", "jwtVerificationPolicy takes effect only under a root whose virtualhost has jwtProviders")
	}
	if msg := contextProblem(r.AuthPolicy); msg != "" {
		return route{}, refused(contourv1.ConditionTypeAuthError, "AuthPolicyInvalid", fmt.Sprintf("routes[%d].authPolicy: %s", i, msg))
	}
	out.ExtAuthPolicy = w.globalAuthPolicy(r.AuthPolicy)
	if out.InternalRedirect, bad = internalRedirect(r.InternalRedirectPolicy); bad != nil {
		return route{}, bad
	}
	replacement, bad := prefixReplacement(r.PathRewritePolicy, m)
	if bad != nil {
		return route{}, bad
	}
	if replacement != "" {
		w.rewrites++
		if out.Rewrite == nil {
			out.Rewrite = &ir.Rewrite{}
		}
		out.Rewrite.PrefixPath, out.Rewrite.HasPath = replacement, true
	}
	if len(r.Services) == 0 && (r.RetryPolicy != nil || r.TimeoutPolicy != nil || r.PathRewritePolicy != nil || r.EnableWebsockets || r.LoadBalancerPolicy != nil ||
		r.HealthCheckPolicy != nil || r.InternalRedirectPolicy != nil || len(r.CookieRewritePolicies) > 0) {
		w.warn(p, i, "PolicyHasNoEffect", "retryPolicy, timeoutPolicy, pathRewritePolicy, loadBalancerPolicy, healthCheckPolicy, internalRedirectPolicy, cookieRewritePolicies and enableWebsockets take effect only on a route with services")
	}
	switch {
	case r.DirectResponsePolicy != nil:
		d := r.DirectResponsePolicy
		if d.StatusCode < 200 || d.StatusCode > 599 {
			return route{}, refused(contourv1.ConditionTypeRouteError, "DirectResponsePolicyInvalid", fmt.Sprintf("directResponsePolicy.statusCode %d is not between 200 and 599", d.StatusCode))
		}
		out.DirectResponse = &ir.DirectResponse{Status: uint32(d.StatusCode), Body: d.Body}
	case r.RequestRedirectPolicy != nil:
		if out.Redirect, bad = redirect(r.RequestRedirectPolicy, m); bad != nil {
			return route{}, bad
		}
	default:
		hc, bad := healthCheck(r.HealthCheckPolicy)
		if bad != nil {
			return route{}, bad
		}
		up := backend.Upstream{IdleConnection: idleConnection, LoadBalancer: lb, HealthCheck: w.names.HealthCheck(hc)}
		if bad := w.services(p, i, r, out, up); bad != nil {
			return route{}, bad
		}
	}
	return route{route: out, insecure: r.PermitInsecure, proxy: p, index: i}, nil
}
