package envoysim

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
)

// forward follows RouteAction: the cluster (or weighted clusters, or the
// cluster named by a header), host and path rewrites, then the header
// mutations of every level.
func (s *Simulator) forward(ra *routev3.RouteAction, m *routev3.RouteMatch, matched string, r *httpRequest, req Request, lv levels, a *Answer) error {
	if err := understand(ra, "cluster", "weighted_clusters", "cluster_header", "prefix_rewrite", "regex_rewrite",
		"host_rewrite_literal", "host_rewrite_header", "timeout", "idle_timeout", "retry_policy", "request_mirror_policies", "upgrade_configs",
		"max_stream_duration", "hash_policy", "priority", "cluster_not_found_response_code", "internal_redirect_policy", "rate_limits"); err != nil {
		return err
	}
	var err error
	if a.InternalRedirect, err = internalRedirectOf(ra.GetInternalRedirectPolicy()); err != nil {
		return err
	}
	if ra.GetTimeout() != nil {
		a.Timeout = ra.GetTimeout().AsDuration().String()
	}
	if a.retries, err = retriesOf(ra); err != nil {
		return err
	}
	if rp := ra.GetRetryPolicy(); rp != nil {
		retries := uint32(1)
		if rp.GetNumRetries() != nil {
			retries = rp.GetNumRetries().GetValue()
		}
		a.Retry = fmt.Sprintf("retry_on %s, %d retries", rp.GetRetryOn(), retries)
		if rp.GetPerTryTimeout() != nil {
			a.Retry += fmt.Sprintf(", per try timeout %s", rp.GetPerTryTimeout().AsDuration())
		}
		if codes := rp.GetRetriableStatusCodes(); len(codes) > 0 {
			a.Retry += fmt.Sprintf(", status codes %v", codes)
		}
	}
	for _, mp := range ra.GetRequestMirrorPolicies() {
		if err := understand(mp, "cluster", "runtime_fraction", "trace_sampled"); err != nil {
			return err
		}
		b := Backend{Cluster: mp.GetCluster()}
		if err := s.upstream(&b, 503); err != nil {
			return err
		}
		a.Mirrors = append(a.Mirrors, Mirror{Cluster: mp.GetCluster(), Endpoints: b.Endpoints, TLS: b.TLS, HTTP2: b.HTTP2,
			Fraction: fraction(mp.GetRuntimeFraction().GetDefaultValue(), mp.GetRuntimeFraction() == nil)})
	}
	a.Upgrades = upgradesOf(a.Upgrades, ra.GetUpgradeConfigs())

	// The rewrites: host, then path (prefix or regex), recording the
	// original path as Envoy does.
	up := r.clone()
	if h := ra.GetHostRewriteLiteral(); h != "" {
		up.authority = h
	}
	if name := ra.GetHostRewriteHeader(); name != "" {
		// The header's value, when the request has one; a pseudo-header
		// cannot be named (route_components.proto).
		if strings.HasPrefix(name, ":") {
			return errUnsupportedf("host_rewrite_header %s: Envoy refuses a pseudo-header", name)
		}
		if v := r.header(name); v != "" {
			up.authority = v
		}
	}
	switch {
	case ra.GetPrefixRewrite() != "":
		if err := refuseRegexPrefix(m); err != nil {
			return err
		}
		up.path = ra.GetPrefixRewrite() + up.path[len(matched):]
	case ra.GetRegexRewrite() != nil:
		p, err := regexRewrite(ra.GetRegexRewrite(), up.path)
		if err != nil {
			return err
		}
		up.path = p
	}
	if up.path != r.path {
		up.headers = append(up.headers, Header{Name: "x-envoy-original-path", Value: r.path})
	}

	type choice struct {
		cluster string
		weight  uint32
		m, resp mutation
		host    string
		// lua is the weighted cluster's script, run on its responses.
		lua string
	}
	var choices []choice
	switch spec := ra.GetClusterSpecifier().(type) {
	case *routev3.RouteAction_Cluster:
		choices = []choice{{cluster: spec.Cluster, weight: 1}}
	case *routev3.RouteAction_ClusterHeader:
		choices = []choice{{cluster: r.header(spec.ClusterHeader), weight: 1}}
	case *routev3.RouteAction_WeightedClusters:
		if err := understand(spec.WeightedClusters, "clusters", "total_weight"); err != nil {
			return err
		}
		for _, cw := range spec.WeightedClusters.GetClusters() {
			if err := understand(cw, "name", "weight", "request_headers_to_add", "request_headers_to_remove",
				"response_headers_to_add", "response_headers_to_remove", "host_rewrite_literal", "typed_per_filter_config"); err != nil {
				return err
			}
			for name := range cw.GetTypedPerFilterConfig() {
				if name != luaFilterName {
					return errUnsupportedf("weighted cluster configuration of filter %s", name)
				}
			}
			script, err := luaScript(cw.GetTypedPerFilterConfig()[luaFilterName])
			if err != nil {
				return err
			}
			choices = append(choices, choice{
				lua:     script,
				cluster: cw.GetName(), weight: cw.GetWeight().GetValue(), host: cw.GetHostRewriteLiteral(),
				m:    mutation{cw.GetRequestHeadersToRemove(), cw.GetRequestHeadersToAdd()},
				resp: mutation{cw.GetResponseHeadersToRemove(), cw.GetResponseHeadersToAdd()},
			})
		}
	default:
		return errUnsupportedf("cluster specifier %T", spec)
	}
	var total uint32
	for _, c := range choices {
		total += c.weight
	}
	if total == 0 {
		return fmt.Errorf("weighted clusters with a total weight of 0: Envoy rejects the route")
	}
	notFound := 503
	switch ra.GetClusterNotFoundResponseCode() {
	case routev3.RouteAction_NOT_FOUND:
		notFound = 404
	case routev3.RouteAction_INTERNAL_SERVER_ERROR:
		notFound = 500
	}
	for _, c := range choices {
		b := Backend{Cluster: c.cluster, Weight: c.weight, TotalWeight: total, Endpoints: []string{}}
		one := up.clone()
		if c.host != "" {
			one.authority = c.host
		}
		var err error
		if one.headers, err = lv.request(c.m, one.headers); err != nil {
			return err
		}
		if b.ResponseHeaders, err = lv.response(c.resp, normalizeHeaders(req.BackendResponseHeaders)); err != nil {
			return err
		}
		if c.lua != "" {
			// The Lua filter, before the router in the chain, sees the
			// response after the router's changes.
			if b.ResponseHeaders, err = runResponseLua(c.lua, b.ResponseHeaders); err != nil {
				return err
			}
		}
		if err := s.upstream(&b, notFound); err != nil {
			return err
		}
		// The request as the backend would see it, also when Envoy
		// answers 503 itself for want of endpoints (Status says so).
		b.Request = one.export()
		a.Backends = append(a.Backends, b)
	}
	hash, setCookie, err := requestHash(ra.GetHashPolicy(), r)
	if err != nil {
		return err
	}
	for i := range a.Backends {
		b := &a.Backends[i]
		if b.LoadBalancer == "RING_HASH" {
			b.Hash = hash
		}
		if setCookie != nil {
			b.ResponseHeaders = append(b.ResponseHeaders, *setCookie)
		}
	}
	a.Upstream = pick(a.Backends, req.Seed)
	for i := range a.Mirrors {
		a.Mirrors[i].Request = shadow(a.Upstream.Request)
	}
	return nil
}

// shadow is the copy of a request a mirror receives: Envoy appends
// "-shadow" to its host, before the port.
func shadow(r *HTTPRequest) *HTTPRequest {
	c := *r
	c.Headers = slices.Clone(r.Headers)
	host, port := r.Authority, ""
	if h := stripPort(host); h != host {
		host, port = h, host[len(h):]
	}
	c.Authority = host + "-shadow" + port
	return &c
}

// pick is a deterministic choice among weighted backends: the seed falls
// into one backend's share of the total weight.
func pick(backends []Backend, seed uint64) *Backend {
	if len(backends) == 0 {
		return nil
	}
	x := uint32(seed % uint64(backends[0].TotalWeight))
	for i := range backends {
		if x < backends[i].Weight {
			return &backends[i]
		}
		x -= backends[i].Weight
	}
	return nil
}

// refuseRegexPrefix: prefix_rewrite needs a prefix or path match.
func refuseRegexPrefix(m *routev3.RouteMatch) error {
	if _, isRegex := m.GetPathSpecifier().(*routev3.RouteMatch_SafeRegex); isRegex {
		return fmt.Errorf("prefix_rewrite with a regex match: Envoy rejects the route")
	}
	return nil
}

// redirect follows RedirectAction: scheme, host, port and path are
// swapped for the configured values; the query is kept unless strip_query.
func (s *Simulator) redirect(rd *routev3.RedirectAction, m *routev3.RouteMatch, matched string, r *httpRequest, lv levels, a *Answer) error {
	if err := understand(rd, "https_redirect", "scheme_redirect", "host_redirect", "port_redirect", "path_redirect",
		"prefix_rewrite", "regex_rewrite", "response_code", "strip_query"); err != nil {
		return err
	}
	scheme := r.scheme
	switch {
	case rd.GetHttpsRedirect():
		scheme = "https"
	case rd.GetSchemeRedirect() != "":
		scheme = strings.ToLower(rd.GetSchemeRedirect())
	}
	host := r.authority
	if rd.GetHostRedirect() != "" {
		host = rd.GetHostRedirect()
	}
	switch {
	case rd.GetPortRedirect() != 0:
		host = stripPort(host) + ":" + itoa(int(rd.GetPortRedirect()))
	case scheme != r.scheme && stripPort(host) != host:
		return errUnsupportedf("a scheme redirect of a host with a port (%s): whether Envoy keeps the port is not modelled", host)
	}
	pathPart, query, hasQuery := strings.Cut(r.path, "?")
	switch {
	case rd.GetPathRedirect() != "":
		// path_redirect replaces the path; a query in it replaces the
		// request's.
		p, q, hq := strings.Cut(rd.GetPathRedirect(), "?")
		pathPart = p
		if hq {
			query, hasQuery = q, true
		}
	case rd.GetPrefixRewrite() != "":
		if err := refuseRegexPrefix(m); err != nil {
			return err
		}
		pathPart = rd.GetPrefixRewrite() + pathPart[min(len(matched), len(pathPart)):]
	case rd.GetRegexRewrite() != nil:
		p, err := regexRewrite(rd.GetRegexRewrite(), pathPart)
		if err != nil {
			return err
		}
		pathPart = p
	}
	location := scheme + "://" + host + pathPart
	if hasQuery && !rd.GetStripQuery() {
		location += "?" + query
	}
	headers, err := lv.response(mutation{}, []Header{{Name: "location", Value: location}})
	if err != nil {
		return err
	}
	a.Response = &Response{Status: statusOf(rd.GetResponseCode()), Headers: headers}
	return nil
}

// direct follows DirectResponseAction.
func (s *Simulator) direct(d *routev3.DirectResponseAction, req Request, lv levels, a *Answer) error {
	if err := understand(d, "status", "body"); err != nil {
		return err
	}
	if err := understand(d.GetBody(), "inline_string", "inline_bytes"); d.GetBody() != nil && err != nil {
		return err
	}
	body := d.GetBody().GetInlineString()
	if b := d.GetBody().GetInlineBytes(); b != nil {
		body = string(b)
	}
	// Envoy's local reply carries the body's length, and text/plain for a
	// body; the route's response header mutations apply after.
	base := []Header{{Name: "content-length", Value: itoa(len(body))}}
	if body != "" {
		base = append(base, Header{Name: "content-type", Value: "text/plain"})
	}
	headers, err := lv.response(mutation{}, base)
	if err != nil {
		return err
	}
	a.Response = &Response{Status: int(d.GetStatus()), Headers: headers, Body: body}
	return nil
}

// regexRewrite follows RegexMatchAndSubstitute: every match of the pattern
// in the path (query excluded) is replaced; \1 in the substitution is a
// capture group.
func regexRewrite(rw *matcherv3.RegexMatchAndSubstitute, p string) (string, error) {
	if err := understand(rw, "pattern", "substitution"); err != nil {
		return "", err
	}
	if err := understand(rw.GetPattern(), "regex", "google_re2"); err != nil {
		return "", err
	}
	re, err := regexp.Compile(rw.GetPattern().GetRegex())
	if err != nil {
		return "", fmt.Errorf("regex_rewrite %q: %w", rw.GetPattern().GetRegex(), err)
	}
	sub := strings.ReplaceAll(rw.GetSubstitution(), "$", "$$")
	sub = regexp.MustCompile(`\\(\d)`).ReplaceAllString(sub, "$${$1}")
	pathPart, query, hasQuery := strings.Cut(p, "?")
	out := re.ReplaceAllString(pathPart, sub)
	if hasQuery {
		out += "?" + query
	}
	return out, nil
}

// fraction is a FractionalPercent as a number; an unset runtime fraction
// means always.
func fraction(f *typev3.FractionalPercent, unset bool) float64 {
	if unset {
		return 1
	}
	den := 100.0
	switch f.GetDenominator() {
	case typev3.FractionalPercent_TEN_THOUSAND:
		den = 10000
	case typev3.FractionalPercent_MILLION:
		den = 1000000
	}
	return float64(f.GetNumerator()) / den
}

func normalizeHeaders(hs []Header) []Header {
	out := make([]Header, len(hs))
	for i, h := range hs {
		out[i] = Header{Name: strings.ToLower(h.Name), Value: h.Value}
	}
	return out
}
