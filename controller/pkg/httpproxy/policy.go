package httpproxy

import (
	"cmp"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	contourv1 "github.com/projectcontour/contour/apis/projectcontour/v1"

	"isobar.dev/api/v1alpha1"
	"isobar.dev/controller/pkg/envoyrules"
	"isobar.dev/controller/pkg/ir"
	"isobar.dev/controller/pkg/routerule"
	"isobar.dev/controller/pkg/timeout"
	"isobar.dev/controller/pkg/validate"
)

// hostRewrites says which Host rewrites a headers policy may hold, as
// Contour has them: none (responses), a literal (a service's requests),
// or a literal or another request header's value, %REQ(name)% (a route's
// requests).
type hostRewrites int

const (
	noHost hostRewrites = iota
	literalHost
	anyHost
)

// hostRequestHeader is Contour's dynamic Host: the value of a request
// header.
var hostRequestHeader = regexp.MustCompile(`^%REQ\(([A-Za-z0-9-]+)\)%$`)

// headers translates a headers policy: set replaces a header, remove
// removes it. A request policy may set Host, which rewrites the host
// (what hosts says). Values may hold Contour's dynamic values, which vars
// and Envoy substitute; any other "%" is literal. A policy that cannot be
// served is refused with Contour's sub-condition for it, of type typ with
// reason invalid.
func headers(p *contourv1.HeadersPolicy, what, typ, invalid string, hosts hostRewrites, vars contourVars) (*ir.HeaderModifier, ir.Rewrite, *problem) {
	var host ir.Rewrite
	if p == nil {
		return nil, host, nil
	}
	bad := func(format string, args ...any) (*ir.HeaderModifier, ir.Rewrite, *problem) {
		return nil, ir.Rewrite{}, refused(typ, invalid, what+": "+fmt.Sprintf(format, args...))
	}
	out := &ir.HeaderModifier{}
	seen := map[string]bool{}
	for _, h := range p.Set {
		name := http.CanonicalHeaderKey(h.Name)
		if seen[name] {
			return bad("duplicate header addition: %q", name)
		}
		seen[name] = true
		if err := validate.Token(h.Name, "header name"); err != nil {
			return bad("%v", err)
		}
		if err := validate.Value(h.Value, "header", h.Name, "value"); err != nil {
			return bad("%v", err)
		}
		if name == "Host" {
			if hosts == noHost {
				return bad("rewriting %q header is not supported", name)
			}
			switch m := hostRequestHeader.FindStringSubmatch(strings.TrimSpace(h.Value)); {
			case m != nil && hosts == anyHost:
				host.HostnameHeader = m[1]
			case strings.Contains(h.Value, "%"):
				return bad("the Host rewrite %q cannot hold a dynamic value; a route's may be a request header's value alone, %%REQ(name)%%", h.Value)
			default:
				host.Hostname = h.Value
			}
			continue
		}
		if !envoyrules.Modifiable(h.Name) {
			return bad("header %q cannot be set", h.Name)
		}
		out.Set = append(out.Set, dynamicHeader(h.Name, h.Value, vars))
	}
	seen = map[string]bool{}
	for _, name := range p.Remove {
		key := http.CanonicalHeaderKey(name)
		if seen[key] {
			return bad("duplicate header removal: %q", key)
		}
		seen[key] = true
		if err := validate.Token(name, "header name"); err != nil {
			return bad("%v", err)
		}
		if !envoyrules.Modifiable(name) {
			return bad("header %q cannot be removed", name)
		}
		out.Remove = append(out.Remove, name)
	}
	if len(out.Set) == 0 && len(out.Remove) == 0 {
		out = nil
	}
	return out, host, nil
}

// serviceHeaders are a service's header policies: for its share of the
// route's requests, and of their responses; host is the literal Host its
// requests get, "" for the route's.
//
// The profile's policy (pol) is the default under the service's own: a
// mistake in it is reported as the profile's, on every proxy.
func serviceHeaders(p *contourv1.HTTPProxy, s *contourv1.Service, route, service int, pol *v1alpha1.GlobalHeadersPolicy) (req, resp *ir.HeaderModifier, host string, bad *problem) {
	vars := contourVars{namespace: p.Namespace, service: s.Name, port: s.Port}
	reqPolicy, respPolicy := s.RequestHeadersPolicy, s.ResponseHeadersPolicy
	if pol != nil {
		if _, _, _, err := GlobalHeaders(pol, p.Namespace, s.Name, s.Port); err != nil {
			return nil, nil, "", refused(contourv1.ConditionTypeServiceError, "RequestHeadersPolicyInvalid", "the Gateway's profile: "+err.Error())
		}
		reqPolicy, respPolicy = withDefaults(reqPolicy, pol.RequestHeaders), withDefaults(respPolicy, pol.ResponseHeaders)
	}
	if reqPolicy == nil && respPolicy == nil {
		return nil, nil, "", nil
	}
	at := fmt.Sprintf("routes[%d].services[%d]", route, service)
	var rw ir.Rewrite
	if req, rw, bad = headers(reqPolicy, at+".requestHeadersPolicy", contourv1.ConditionTypeServiceError, "RequestHeadersPolicyInvalid", literalHost, vars); bad != nil {
		return nil, nil, "", bad
	}
	if resp, _, bad = headers(respPolicy, at+".responseHeadersPolicy", contourv1.ConditionTypeServiceError, "ResponseHeadersPolicyInvalid", noHost, vars); bad != nil {
		return nil, nil, "", bad
	}
	return req, resp, rw.Hostname, nil
}

// contourVars are the values of Contour's own dynamic header variables:
// CONTOUR_NAMESPACE, and in a service's policies CONTOUR_SERVICE_NAME
// and CONTOUR_SERVICE_PORT.
type contourVars struct {
	namespace, service string
	port               int
}

// substitute replaces the escaped variables in v, an escaped value.
func (c contourVars) substitute(v string) string {
	esc := func(s string) string { return strings.ReplaceAll(s, "%", "%%") }
	v = strings.ReplaceAll(v, "%%CONTOUR_NAMESPACE%%", esc(c.namespace))
	if c.service != "" {
		v = strings.ReplaceAll(v, "%%CONTOUR_SERVICE_NAME%%", esc(c.service))
		v = strings.ReplaceAll(v, "%%CONTOUR_SERVICE_PORT%%", strconv.Itoa(c.port))
	}
	return v
}

// envoyVariables are the Envoy command operators Contour lets a header
// value use.
var envoyVariables = []string{
	"DOWNSTREAM_REMOTE_ADDRESS", "DOWNSTREAM_REMOTE_ADDRESS_WITHOUT_PORT", "DOWNSTREAM_LOCAL_ADDRESS",
	"DOWNSTREAM_LOCAL_ADDRESS_WITHOUT_PORT", "DOWNSTREAM_LOCAL_PORT", "DOWNSTREAM_LOCAL_URI_SAN",
	"DOWNSTREAM_PEER_URI_SAN", "DOWNSTREAM_LOCAL_SUBJECT", "DOWNSTREAM_PEER_SUBJECT", "DOWNSTREAM_PEER_ISSUER",
	"DOWNSTREAM_TLS_SESSION_ID", "DOWNSTREAM_TLS_CIPHER", "DOWNSTREAM_TLS_VERSION", "DOWNSTREAM_PEER_FINGERPRINT_256",
	"DOWNSTREAM_PEER_FINGERPRINT_1", "DOWNSTREAM_PEER_SERIAL", "DOWNSTREAM_PEER_CERT", "DOWNSTREAM_PEER_CERT_V_START",
	"DOWNSTREAM_PEER_CERT_V_END", "HOSTNAME", "PROTOCOL", "UPSTREAM_REMOTE_ADDRESS", "RESPONSE_FLAGS", "RESPONSE_CODE_DETAILS",
	"TLS_JA3_FINGERPRINT", "TLS_JA4_FINGERPRINT",
}

// reqVariable is Envoy's %REQ(name)%, with an alternative header and a
// length limit, which Contour lets through.
var reqVariable = regexp.MustCompile(`%(%REQ\(:?[\w-]+(\?:?[\w-]+)?\)(:\d+)?%)%`)

// dynamicHeader is a header whose value may hold Contour's dynamic
// values, as Contour writes it for Envoy: every "%" is escaped but those
// of vars, which are substituted, and of the Envoy variables Contour
// allows. A value without "%" stays literal.
func dynamicHeader(name, value string, vars contourVars) ir.Header {
	if !strings.Contains(value, "%") {
		return ir.Header{Name: name, Value: value}
	}
	v := vars.substitute(strings.ReplaceAll(value, "%", "%%"))
	for _, k := range envoyVariables {
		v = strings.ReplaceAll(v, "%%"+k+"%%", "%"+k+"%")
	}
	v = reqVariable.ReplaceAllString(v, "$1")
	return ir.Header{Name: name, Value: v, Formatted: true}
}

// timeouts applies a timeout policy: the response timeout and the
// stream's idle timeout of the route, and returns the idle timeout of the
// connections to its services (negative: none). "infinity" turns each off.
func timeouts(r *ir.Route, tp *contourv1.TimeoutPolicy) (time.Duration, *problem) {
	if tp == nil {
		return 0, nil
	}
	response, err := timeout.Parse(tp.Response)
	if err != nil {
		return 0, refused(contourv1.ConditionTypeRouteError, "TimeoutPolicyNotValid", fmt.Sprintf("route.timeoutPolicy failed to parse: error parsing response timeout: %v", err))
	}
	idle, err := timeout.Parse(tp.Idle)
	if err != nil {
		return 0, refused(contourv1.ConditionTypeRouteError, "TimeoutPolicyNotValid", fmt.Sprintf("route.timeoutPolicy failed to parse: error parsing idle timeout: %v", err))
	}
	conn, err := timeout.Parse(tp.IdleConnection)
	if err != nil {
		return 0, refused(contourv1.ConditionTypeServiceError, "TimeoutPolicyNotValid", fmt.Sprintf("route.timeoutPolicy failed to parse: error parsing idle connection timeout: %v", err))
	}
	switch {
	case response < 0:
		r.TimeoutDisabled = true
	case response > 0:
		r.Timeout = response
	}
	switch {
	case idle < 0:
		r.IdleTimeoutDisabled = true
	case idle > 0:
		r.IdleTimeout = idle
	}
	return conn, nil
}

// redirect is a request redirect policy of a route matching m: scheme,
// hostname, port, status (302 unless set), and the path or a replacement
// of the matched prefix.
func redirect(p *contourv1.HTTPRequestRedirectPolicy, m ir.Match) (*ir.Redirect, *problem) {
	rd := &ir.Redirect{StatusCode: 302}
	switch {
	case p.Path != nil && p.Prefix != nil:
		return nil, refused(contourv1.ConditionTypeRouteError, "RequestRedirectPolicy", "cannot specify both redirect path and redirect prefix")
	case p.Prefix != nil && m.PathType == ir.PathRegex:
		// Envoy rejects a prefix rewrite of a regex match.
		return nil, refused(contourv1.ConditionTypeRouteError, "RequestRedirectPolicy", "requestRedirectPolicy.prefix needs a prefix or exact path condition, not a regex")
	case p.Prefix != nil:
		if err := validate.Path("requestRedirectPolicy.prefix", *p.Prefix); err != nil {
			return nil, refused(contourv1.ConditionTypeRouteError, "RequestRedirectPolicy", err.Error())
		}
		rd.PrefixPath, rd.HasPath = *p.Prefix, true
	}
	if p.Scheme != nil {
		rd.Scheme = *p.Scheme
	}
	if p.Hostname != nil {
		if err := validate.Hostname(*p.Hostname, false); err != nil {
			return nil, refused(contourv1.ConditionTypeRouteError, "RequestRedirectPolicy", err.Error())
		}
		rd.Hostname = *p.Hostname
	}
	if p.Port != nil {
		rd.Port = uint32(*p.Port)
	}
	if p.StatusCode != nil {
		rd.StatusCode = int(*p.StatusCode)
	}
	if rd.StatusCode != 301 && rd.StatusCode != 302 {
		return nil, refused(contourv1.ConditionTypeRouteError, "RequestRedirectPolicy", fmt.Sprintf("statusCode %d is not 301 or 302", rd.StatusCode))
	}
	if p.Path != nil {
		if err := validate.Path("requestRedirectPolicy.path", *p.Path); err != nil {
			return nil, refused(contourv1.ConditionTypeRouteError, "RequestRedirectPolicy", err.Error())
		}
		rd.FullPath, rd.HasPath = *p.Path, true
	}
	return rd, nil
}

// retries is a retry policy as Contour has it: count -1 turns retries
// off and 0 is Envoy's default of one; retryOn defaults to 5xx; a
// per-try timeout that is not a duration ("infinity") is none. It
// returns a warning's reason and message for a setting that takes no
// effect.
func retries(r *ir.Route, rp *contourv1.RetryPolicy) (string, string) {
	if rp == nil {
		return "", ""
	}
	rt := &ir.Retry{Attempts: int(rp.NumRetries), On: []string{"5xx"}, Codes: rp.RetriableStatusCodes}
	switch rp.NumRetries {
	case -1:
		rt.Attempts = 0
	case 0:
		rt.Attempts = 1
	}
	if len(rp.RetryOn) > 0 {
		rt.On = make([]string, len(rp.RetryOn))
		for i, on := range rp.RetryOn {
			rt.On[i] = string(on)
		}
	}
	if d, err := time.ParseDuration(rp.PerTryTimeout); err == nil && d > 0 {
		r.BackendTimeout = d
	}
	r.Retry = rt
	if len(rt.Codes) > 0 && !slices.Contains(rt.On, "retriable-status-codes") {
		return "RetriableStatusCodesIgnored", "retryPolicy.retriableStatusCodes take effect only with retryOn retriable-status-codes"
	}
	return "", ""
}

// prefixReplacement is the replacement of route's pathRewritePolicy for
// its merged prefix: the one written for that prefix, or else the one
// without a prefix; "" when none applies.
func prefixReplacement(p *contourv1.PathRewritePolicy, m ir.Match) (string, *problem) {
	if p == nil || len(p.ReplacePrefix) == 0 {
		return "", nil
	}
	if m.PathType != ir.PathStringPrefix {
		return "", refused(contourv1.ConditionTypePrefixReplaceError, "MustHavePrefix", "cannot specify prefix replacements without a prefix condition")
	}
	seen := map[string]bool{}
	for _, rp := range p.ReplacePrefix {
		if seen[rp.Prefix] {
			if rp.Prefix != "" {
				return "", refused(contourv1.ConditionTypePrefixReplaceError, "DuplicateReplacement", fmt.Sprintf("duplicate replacement prefix '%s'", rp.Prefix))
			}
			return "", refused(contourv1.ConditionTypePrefixReplaceError, "AmbiguousReplacement", "ambiguous prefix replacement")
		}
		seen[rp.Prefix] = true
	}
	for _, rp := range p.ReplacePrefix {
		if rp.Prefix != "" && rp.Prefix == m.Path {
			return rp.Replacement, nil
		}
	}
	for _, rp := range p.ReplacePrefix {
		if rp.Prefix == "" {
			return rp.Replacement, nil
		}
	}
	return "", nil
}

// expandPrefixRewrites makes the prefix replacements of routes[start:]
// keep path separators as Contour does: Envoy replaces a string prefix
// as written, so that "/foo" to "/bar" turns "/foo/x" into "/bar/x" but
// "/foo/" to "/bar" would give "/barx". Where a prefix (other than "/")
// is the prefix of one route only, and that route replaces it, the route
// is split into one for "/foo" and one for "/foo/", replacing without and
// with the trailing separator. Routes written for both "/foo" and "/foo/"
// are left as written. Contour does this at every level of the tree.
func expandPrefixRewrites(routes []route, start int) []route {
	groups := map[string]int{}
	for _, r := range routes[start:] {
		if prefix, ok := slashless(r.route.Match); ok {
			groups[prefix]++
		}
	}
	for i := start; i < len(routes); i++ {
		r := routes[i]
		prefix, ok := slashless(r.route.Match)
		if !ok || groups[prefix] != 1 || prefix == "/" || r.route.Rewrite == nil || !r.route.Rewrite.HasPath {
			continue
		}
		groups[prefix]++ // split once
		replacement := strings.TrimRight(r.route.Rewrite.PrefixPath, "/")
		bare := *r.route
		bare.Match.Path = prefix
		bare.Rewrite = &ir.Rewrite{Hostname: r.route.Rewrite.Hostname, HostnameHeader: r.route.Rewrite.HostnameHeader, PrefixPath: cmp.Or(replacement, "/"), HasPath: true}
		slash := *r.route
		r.match = 1
		slash.Name = routerule.RouteName("httpproxy", r.proxy.Namespace, r.proxy.Name, r.index, nil, r.match)
		slash.Match.Path = prefix + "/"
		slash.Rewrite = &ir.Rewrite{Hostname: r.route.Rewrite.Hostname, HostnameHeader: r.route.Rewrite.HostnameHeader, PrefixPath: replacement + "/", HasPath: true}
		*r.route = bare
		r.route = &slash
		routes = append(routes, r)
	}
	return routes
}

// slashless is a string prefix match's prefix without trailing
// separators ("/" stays "/").
func slashless(m ir.Match) (string, bool) {
	if m.PathType != ir.PathStringPrefix {
		return "", false
	}
	if m.Path == "/" {
		return m.Path, true
	}
	return strings.TrimRight(m.Path, "/"), true
}

// mirror is a route's mirror service: a share of its requests, weight
// percent (all when 0), copied to the service's cluster.
func mirror(d *ir.Destination, weight int64) ir.Mirror {
	percent := float64(weight)
	if weight == 0 {
		percent = 100
	}
	m := ir.Mirror{Percent: min(percent, 100)}
	for _, b := range d.Backends {
		m.Cluster = b.Cluster
	}
	return m
}

// contourAffinityCookie is the cookie Contour's Cookie strategy pins a
// client to an endpoint with.
const contourAffinityCookie = "X-Contour-Session-Affinity"

// loadBalancer reads a route's loadBalancerPolicy as Contour does: the
// policy of its services' clusters, the hash a ring hash picks an endpoint
// by (Cookie: Contour's session cookie; RequestHash: the request hash
// policies, each naming exactly one of a header, a query parameter or
// the source IP), and warnings for what it ignores, as Contour does.
func loadBalancer(p *contourv1.LoadBalancerPolicy) (ir.LoadBalancer, []ir.HashPolicy, []string) {
	if p == nil {
		return "", nil, nil
	}
	var warnings []string
	if len(p.RequestHashPolicies) > 0 && p.Strategy != "RequestHash" {
		warnings = append(warnings, "loadBalancerPolicy.requestHashPolicies take effect only with strategy RequestHash")
	}
	switch p.Strategy {
	case "", "RoundRobin":
		return "", nil, warnings
	case "WeightedLeastRequest":
		return ir.LeastRequest, nil, warnings
	case "Random":
		return ir.Random, nil, warnings
	case "Cookie":
		return ir.RingHash, []ir.HashPolicy{{Cookie: &ir.CookieHash{Name: contourAffinityCookie, Path: "/"}}}, warnings
	case "RequestHash":
		hashes, ignored := requestHashes(p.RequestHashPolicies)
		warnings = append(warnings, ignored...)
		if len(hashes) == 0 {
			return "", nil, append(warnings, "no valid request hash policy: strategy RoundRobin")
		}
		return ir.RingHash, hashes, warnings
	}
	return "", nil, append(warnings, fmt.Sprintf("loadBalancerPolicy.strategy %q is not a strategy: RoundRobin", p.Strategy))
}

// requestHashes are the valid request hash policies, and why each other
// is ignored: one naming none or several inputs, the source IP twice, a
// header or query parameter twice or with an invalid name.
func requestHashes(policies []contourv1.RequestHashPolicy) ([]ir.HashPolicy, []string) {
	var out []ir.HashPolicy
	var ignored []string
	seen := map[string]bool{}
	for i, hp := range policies {
		n := 0
		for _, set := range []bool{hp.HashSourceIP, hp.HeaderHashOptions != nil, hp.QueryParameterHashOptions != nil} {
			if set {
				n++
			}
		}
		h := ir.HashPolicy{Terminal: hp.Terminal}
		var key string
		switch {
		case n != 1:
			ignored = append(ignored, fmt.Sprintf("requestHashPolicies[%d] ignored: it must set exactly one of hashSourceIP, headerHashOptions or queryParameterHashOptions", i))
			continue
		case hp.HashSourceIP:
			h.SourceIP, key = true, "source IP"
		case hp.HeaderHashOptions != nil:
			name := strings.ToLower(hp.HeaderHashOptions.HeaderName)
			if validate.Token(name) != nil {
				ignored = append(ignored, fmt.Sprintf("requestHashPolicies[%d] ignored: %q is not a header name", i, hp.HeaderHashOptions.HeaderName))
				continue
			}
			h.Header, key = name, "header "+name
		default:
			// Query parameter names are compared in lower case, as
			// Contour does.
			name := strings.ToLower(hp.QueryParameterHashOptions.ParameterName)
			if name == "" {
				ignored = append(ignored, fmt.Sprintf("requestHashPolicies[%d] ignored: the query parameter name is empty", i))
				continue
			}
			h.QueryParameter, key = name, "query parameter "+name
		}
		if seen[key] {
			ignored = append(ignored, fmt.Sprintf("requestHashPolicies[%d] ignored: %s is hashed already", i, key))
			continue
		}
		seen[key] = true
		out = append(out, h)
	}
	return out, ignored
}

// internalRedirect is a route's internalRedirectPolicy, as Contour gives
// it to Envoy. The statuses and the cross-scheme choice are checked here
// too: the CRD's enums do not hold offline, and Envoy would ignore a
// status it does not follow.
func internalRedirect(p *contourv1.HTTPInternalRedirectPolicy) (*ir.InternalRedirect, *problem) {
	if p == nil {
		return nil, nil
	}
	out := &ir.InternalRedirect{Max: p.MaxInternalRedirects, DenyRepeated: p.DenyRepeatedRouteRedirect, CrossScheme: cmp.Or(p.AllowCrossSchemeRedirect, "Never")}
	switch out.CrossScheme {
	case "Never", "Always", "SafeOnly":
	default:
		return nil, refused(contourv1.ConditionTypeRouteError, "InternalRedirectPolicyInvalid",
			fmt.Sprintf("internalRedirectPolicy.allowCrossSchemeRedirect %q is not Always, Never or SafeOnly", p.AllowCrossSchemeRedirect))
	}
	for _, c := range p.RedirectResponseCodes {
		switch c {
		case 301, 302, 303, 307, 308:
			out.Codes = append(out.Codes, uint32(c))
		default:
			return nil, refused(contourv1.ConditionTypeRouteError, "InternalRedirectPolicyInvalid",
				fmt.Sprintf("internalRedirectPolicy.redirectResponseCodes: %d is not 301, 302, 303, 307 or 308", c))
		}
	}
	return out, nil
}

// slowStart is a service's slowStartPolicy, as Contour reads it: a window
// (a Go duration), an aggression (a decimal, 1 when unset) and the minimum
// weight in per cent. Envoy ramps new endpoints up only under round robin
// and least request, so another strategy is SlowStartInvalid, as in
// Contour.
func slowStart(p *contourv1.SlowStartPolicy, lb ir.LoadBalancer) (ir.SlowStart, *problem) {
	if p == nil {
		return ir.SlowStart{}, nil
	}
	bad := func(format string, args ...any) (ir.SlowStart, *problem) {
		return ir.SlowStart{}, refused(contourv1.ConditionTypeServiceError, "SlowStartInvalid", fmt.Sprintf(format, args...))
	}
	if lb != "" && lb != ir.LeastRequest {
		return bad("slow start is only supported with RoundRobin or WeightedLeastRequest load balancer strategy")
	}
	window, err := time.ParseDuration(p.Window)
	if err != nil || window <= 0 {
		return bad("error parsing window: %q is not a positive duration on slow start", p.Window)
	}
	out := ir.SlowStart{Window: window, Aggression: 1, MinWeightPercent: p.MinimumWeightPercent}
	if p.Aggression != "" {
		if out.Aggression, err = strconv.ParseFloat(p.Aggression, 64); err != nil || out.Aggression <= 0 {
			return bad("error parsing aggression: %q is not a decimal number above 0 on slow start", p.Aggression)
		}
	}
	if out.MinWeightPercent > 100 {
		return bad("minimumWeightPercent %d is above 100 on slow start", out.MinWeightPercent)
	}
	return out, nil
}
