package xds

import (
	"cmp"
	"regexp"
	"strings"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"isobar.dev/controller/pkg/ir"
)

// route builds r's message, of messages from in where it can.
func (x *Translator) route(r *ir.Route, in *routeMessages) *routev3.Route {
	out := &in.routes.take(1)[0]
	out.Name, out.Match = r.Name, match(&r.Match, in)
	switch {
	case r.Redirect != nil:
		out.Action = &routev3.Route_Redirect{Redirect: redirect(r.Redirect, &r.Match)}
	case r.DirectResponse != nil:
		d := &routev3.DirectResponseAction{Status: r.DirectResponse.Status}
		if r.DirectResponse.Body != "" {
			d.Body = &corev3.DataSource{Specifier: &corev3.DataSource_InlineString{InlineString: r.DirectResponse.Body}}
		}
		out.Action = &routev3.Route_DirectResponse{DirectResponse: d}
	case r.Destination != nil:
		out.Action = x.action(r, in)
	default:
		out.Action = &routev3.Route_DirectResponse{DirectResponse: &routev3.DirectResponseAction{Status: 500}}
	}
	if h := r.RequestHeaders; h != nil {
		out.RequestHeadersToAdd = headerOptions(h, in)
		out.RequestHeadersToRemove = h.Remove
	}
	if h := r.ResponseHeaders; h != nil {
		out.ResponseHeadersToAdd = headerOptions(h, in)
		out.ResponseHeadersToRemove = h.Remove
	}
	// Each filter's own per-route configuration, for the routes that ask
	// (the filters do nothing for the others).
	set := func(filter string, cfg proto.Message) {
		if out.TypedPerFilterConfig == nil {
			out.TypedPerFilterConfig = map[string]*anypb.Any{}
		}
		out.TypedPerFilterConfig[filter] = typed(cfg)
	}
	if r.CORS != nil {
		set(corsFilter, corsPolicy(r.CORS))
	}
	if r.IPFilter != nil {
		set(rbacFilter, ipFilter(r.IPFilter))
	}
	if r.LocalRateLimit != nil {
		set(localRateLimitFilter, localRateLimit(r.LocalRateLimit, "route."+r.Name))
	}
	if r.JWTProvider != "" {
		set(jwtAuthnFilter, jwtRequirement(r.JWTProvider))
	}
	if a := cmp.Or(r.ExtAuth, x.globalExtAuth.For(r.ExtAuthPolicy)); a != nil {
		set(extAuthz(a))
	}
	if r.IgnoreVirtualHostRateLimits && len(r.GlobalRateLimits) == 0 {
		set(globalRateLimitFilter, ignoreVirtualHostRateLimits)
	}
	if r.Session != nil {
		set(statefulSessionFilter, statefulSession(r.Session, &r.Match))
	}
	return out
}

// action is the route action of r. Routes that only forward to one
// cluster, most routes, share one action per cluster while a translation
// encodes them: fewer allocations, and marshalling does not care. A
// shared action outlives the route it was built for, so its messages are
// its own, not in's.
func (x *Translator) action(r *ir.Route, in *routeMessages) *routev3.Route_Route {
	c, plain := plainCluster(r)
	if !plain {
		return &routev3.Route_Route{Route: routeAction(r, in)}
	}
	if r.WebsocketsDisabled {
		// A name no cluster has: ":" is in none.
		c += ":no-websockets"
	}
	a, ok := x.actions[c]
	if !ok {
		a = &routev3.Route_Route{Route: routeAction(r, &routeMessages{})}
		x.actions[c] = a
	}
	return a
}

// plainCluster reports whether all routeAction makes of r is a cluster
// name (and whether websockets are off), and which.
func plainCluster(r *ir.Route) (string, bool) {
	if r.Rewrite != nil || len(r.Mirrors) > 0 || r.TimeoutDisabled || r.Timeout > 0 || r.Retry != nil || r.BackendTimeout > 0 ||
		r.IdleTimeout > 0 || r.IdleTimeoutDisabled || len(r.HashPolicies) > 0 || r.InternalRedirect != nil || len(r.GlobalRateLimits) > 0 {
		return "", false
	}
	cluster, live := "", 0
	for _, b := range r.Destination.Backends {
		if b.Weight == 0 {
			continue
		}
		if live++; !bare(b) {
			return "", false
		}
		cluster = b.Cluster
	}
	return cluster, live == 1
}

// bare says a share is its cluster alone, with nothing of its own that
// needs a weighted cluster entry.
func bare(b ir.WeightedCluster) bool {
	return !b.Invalid && b.RequestHeaders == nil && b.ResponseHeaders == nil && len(b.CookieRewrites) == 0 && b.Hostname == ""
}

// noWebsockets turns websocket upgrades off for a route; shared, and never
// changed.
var noWebsockets = []*routev3.RouteAction_UpgradeConfig{{UpgradeType: "websocket", Enabled: wrapperspb.Bool(false)}}

func routeAction(r *ir.Route, in *routeMessages) *routev3.RouteAction {
	a := &routev3.RouteAction{}
	if len(r.GlobalRateLimits) > 0 {
		a.RateLimits = rateLimits(r.GlobalRateLimits)
	}
	var live []ir.WeightedCluster
	for _, b := range r.Destination.Backends {
		if b.Weight > 0 {
			live = append(live, b)
		}
	}
	if len(live) == 1 && bare(live[0]) {
		a.ClusterSpecifier = &routev3.RouteAction_Cluster{Cluster: live[0].Cluster}
	} else {
		wc := &routev3.WeightedCluster{}
		for _, b := range live {
			cw := &routev3.WeightedCluster_ClusterWeight{Name: b.Cluster, Weight: wrapperspb.UInt32(b.Weight)}
			if b.Invalid {
				// A cluster that does not exist, so that Envoy answers
				// this share with cluster_not_found_response_code: the
				// 500 the Gateway API asks for.
				cw.Name = UnresolvedBackendCluster
				a.ClusterNotFoundResponseCode = routev3.RouteAction_INTERNAL_SERVER_ERROR
			}
			if h := b.RequestHeaders; h != nil {
				cw.RequestHeadersToAdd, cw.RequestHeadersToRemove = headerOptions(h, in), h.Remove
			}
			if h := b.ResponseHeaders; h != nil {
				cw.ResponseHeadersToAdd, cw.ResponseHeadersToRemove = headerOptions(h, in), h.Remove
			}
			if len(b.CookieRewrites) > 0 {
				cw.TypedPerFilterConfig = map[string]*anypb.Any{luaFilter: typed(cookieRewriteScript(b.CookieRewrites))}
			}
			if b.Hostname != "" {
				cw.HostRewriteSpecifier = &routev3.WeightedCluster_ClusterWeight_HostRewriteLiteral{HostRewriteLiteral: b.Hostname}
			}
			wc.Clusters = append(wc.Clusters, cw)
		}
		a.ClusterSpecifier = &routev3.RouteAction_WeightedClusters{WeightedClusters: wc}
	}
	for _, h := range r.HashPolicies {
		a.HashPolicy = append(a.HashPolicy, hashPolicy(h))
	}
	if rw := r.Rewrite; rw != nil {
		switch {
		case rw.Hostname != "":
			a.HostRewriteSpecifier = &routev3.RouteAction_HostRewriteLiteral{HostRewriteLiteral: rw.Hostname}
		case rw.HostnameHeader != "":
			a.HostRewriteSpecifier = &routev3.RouteAction_HostRewriteHeader{HostRewriteHeader: rw.HostnameHeader}
		}
		if rw.HasPath {
			if rw.FullPath != "" || rw.PrefixPath == "" && r.Match.PathType != ir.PathPrefix {
				a.RegexRewrite = fullPathRewrite(rw.FullPath)
			} else {
				a.PrefixRewrite, a.RegexRewrite = prefixRewrite(&r.Match, rw.PrefixPath)
			}
		}
	}
	if r.WebsocketsDisabled {
		a.UpgradeConfigs = noWebsockets
	}
	if r.InternalRedirect != nil {
		a.InternalRedirectPolicy = internalRedirect(r.InternalRedirect)
	}
	for _, m := range r.Mirrors {
		a.RequestMirrorPolicies = append(a.RequestMirrorPolicies, &routev3.RouteAction_RequestMirrorPolicy{
			Cluster:         m.Cluster,
			RuntimeFraction: percent(m.Percent),
		})
	}
	switch {
	case r.TimeoutDisabled:
		a.Timeout = durationpb.New(0)
	case r.Timeout > 0:
		a.Timeout = durationpb.New(r.Timeout)
	}
	switch {
	case r.IdleTimeoutDisabled:
		a.IdleTimeout = durationpb.New(0)
	case r.IdleTimeout > 0:
		a.IdleTimeout = durationpb.New(r.IdleTimeout)
	}
	if r.Retry != nil || r.BackendTimeout > 0 {
		rp := &routev3.RetryPolicy{PerTryTimeout: duration(r.BackendTimeout)}
		if rt := r.Retry; rt != nil {
			rp.NumRetries = wrapperspb.UInt32(uint32(rt.Attempts))
			switch {
			case len(rt.On) > 0:
				rp.RetryOn = strings.Join(rt.On, ",")
			default:
				rp.RetryOn = "connect-failure,refused-stream,reset"
				if len(rt.Codes) > 0 {
					rp.RetryOn += ",retriable-status-codes"
				}
			}
			rp.RetriableStatusCodes = rt.Codes
			if rt.Backoff > 0 {
				rp.RetryBackOff = &routev3.RetryPolicy_RetryBackOff{BaseInterval: durationpb.New(rt.Backoff)}
			}
		} else {
			rp.NumRetries = wrapperspb.UInt32(0)
			rp.RetryOn = "reset"
		}
		a.RetryPolicy = rp
	}
	return a
}

// fullPathRewrite replaces the whole path, keeping the query string.
func fullPathRewrite(path string) *matcherv3.RegexMatchAndSubstitute {
	if path == "" {
		path = "/"
	}
	return &matcherv3.RegexMatchAndSubstitute{Pattern: &matcherv3.RegexMatcher{Regex: "^/.*$"}, Substitution: path}
}

// prefixRewrite replaces the matched path prefix. For a prefix of path
// segments, replacing "/foo" with "/" must turn "/foo/bar" into "/bar",
// not "//bar", so that case is a regular expression that also eats the
// separator. A string prefix (HTTPProxy's) is replaced as written, as
// Envoy's prefix_rewrite does: its processor writes the routes that keep
// separators right.
func prefixRewrite(m *ir.Match, replacement string) (string, *matcherv3.RegexMatchAndSubstitute) {
	if m.PathType == ir.PathStringPrefix {
		return replacement, nil
	}
	prefix := strings.TrimRight(m.Path, "/")
	if replacement == "" || replacement == "/" {
		return "", &matcherv3.RegexMatchAndSubstitute{
			Pattern:      &matcherv3.RegexMatcher{Regex: "^" + regexp.QuoteMeta(prefix) + `/*`},
			Substitution: "/",
		}
	}
	return strings.TrimRight(replacement, "/"), nil
}

func redirect(rd *ir.Redirect, m *ir.Match) *routev3.RedirectAction {
	out := &routev3.RedirectAction{SchemeRewriteSpecifier: nil}
	if rd.Scheme != "" {
		out.SchemeRewriteSpecifier = &routev3.RedirectAction_SchemeRedirect{SchemeRedirect: rd.Scheme}
	}
	if rd.Hostname != "" {
		out.HostRedirect = rd.Hostname
	}
	if rd.Port != 0 {
		out.PortRedirect = rd.Port
	}
	if rd.HasPath {
		if rd.FullPath != "" || rd.PrefixPath == "" && m.PathType != ir.PathPrefix {
			p := rd.FullPath
			if p == "" {
				p = "/"
			}
			out.PathRewriteSpecifier = &routev3.RedirectAction_PathRedirect{PathRedirect: p}
		} else {
			prefix, re := prefixRewrite(m, rd.PrefixPath)
			if re != nil {
				out.PathRewriteSpecifier = &routev3.RedirectAction_RegexRewrite{RegexRewrite: re}
			} else {
				out.PathRewriteSpecifier = &routev3.RedirectAction_PrefixRewrite{PrefixRewrite: prefix}
			}
		}
	}
	out.ResponseCode = redirectCode(rd.StatusCode)
	return out
}

func redirectCode(code int) routev3.RedirectAction_RedirectResponseCode {
	switch code {
	case 301:
		return routev3.RedirectAction_MOVED_PERMANENTLY
	case 303:
		return routev3.RedirectAction_SEE_OTHER
	case 307:
		return routev3.RedirectAction_TEMPORARY_REDIRECT
	case 308:
		return routev3.RedirectAction_PERMANENT_REDIRECT
	default:
		return routev3.RedirectAction_FOUND
	}
}

// headerOptions translates Set (replace) and Add (append) in that order,
// with messages from in.
func headerOptions(h *ir.HeaderModifier, in *routeMessages) []*corev3.HeaderValueOption {
	n := len(h.Set) + len(h.Add)
	if n == 0 {
		return nil
	}
	slab := in.options.take(n)
	out := in.optionList.take(n)
	for i := range slab {
		hd, how := ir.Header{}, corev3.HeaderValueOption_OVERWRITE_IF_EXISTS_OR_ADD
		if i < len(h.Set) {
			hd = h.Set[i]
		} else {
			hd, how = h.Add[i-len(h.Set)], corev3.HeaderValueOption_APPEND_IF_EXISTS_OR_ADD
		}
		o := &slab[i]
		o.value.Key, o.value.Value = hd.Name, hd.Value
		if !hd.Formatted {
			o.value.Value = literal(hd.Value)
		}
		o.option.Header, o.option.AppendAction = &o.value, how
		out[i] = &o.option
	}
	return out
}

// literal escapes a header value for Envoy, which reads "%...%" in added
// headers as a command operator (%DOWNSTREAM_REMOTE_ADDRESS%) and rejects
// the whole route configuration over a lone "%": a Gateway API value is
// always literal, so "50%" must reach Envoy as "50%%".
func literal(v string) string {
	return strings.ReplaceAll(v, "%", "%%")
}

// percent is a runtime fraction of requests, in millionths so that
// fractions such as 1/3 keep their precision.
func percent(p float64) *corev3.RuntimeFractionalPercent {
	return &corev3.RuntimeFractionalPercent{DefaultValue: &typev3.FractionalPercent{
		Numerator:   uint32(p * 10000),
		Denominator: typev3.FractionalPercent_MILLION,
	}}
}

// hashPolicy is one input of the hash a ring hash cluster picks an
// endpoint by. A cookie with a TTL, zero here, is one Envoy sets when the
// request has none: for the session.
func hashPolicy(h ir.HashPolicy) *routev3.RouteAction_HashPolicy {
	out := &routev3.RouteAction_HashPolicy{Terminal: h.Terminal}
	switch {
	case h.Header != "":
		out.PolicySpecifier = &routev3.RouteAction_HashPolicy_Header_{Header: &routev3.RouteAction_HashPolicy_Header{HeaderName: h.Header}}
	case h.QueryParameter != "":
		out.PolicySpecifier = &routev3.RouteAction_HashPolicy_QueryParameter_{QueryParameter: &routev3.RouteAction_HashPolicy_QueryParameter{Name: h.QueryParameter}}
	case h.SourceIP:
		out.PolicySpecifier = &routev3.RouteAction_HashPolicy_ConnectionProperties_{ConnectionProperties: &routev3.RouteAction_HashPolicy_ConnectionProperties{SourceIp: true}}
	case h.Cookie != nil:
		out.PolicySpecifier = &routev3.RouteAction_HashPolicy_Cookie_{Cookie: &routev3.RouteAction_HashPolicy_Cookie{
			Name: h.Cookie.Name, Path: h.Cookie.Path, Ttl: durationpb.New(0),
		}}
	}
	return out
}
