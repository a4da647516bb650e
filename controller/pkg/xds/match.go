package xds

import (
	"strings"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"

	"isobar.dev/controller/pkg/ir"
)

// match translates a match. A path prefix matches whole path segments
// ("/foo" matches "/foo" and "/foo/bar", not "/foobar"), which is Envoy's
// path_separated_prefix; a trailing slash in the prefix is ignored. A
// string prefix (HTTPProxy's) is Envoy's prefix.
// The common messages come from in.
func match(m *ir.Match, in *routeMessages) *routev3.RouteMatch {
	all := &in.matches.take(1)[0]
	out := &all.match
	switch m.PathType {
	case ir.PathExact:
		out.PathSpecifier = &routev3.RouteMatch_Path{Path: m.Path}
	case ir.PathRegex:
		out.PathSpecifier = &routev3.RouteMatch_SafeRegex{SafeRegex: &matcherv3.RegexMatcher{Regex: m.Path}}
	case ir.PathStringPrefix:
		out.PathSpecifier = &routev3.RouteMatch_Prefix{Prefix: m.Path}
	default:
		p := strings.TrimRight(m.Path, "/")
		if p == "" {
			out.PathSpecifier = &routev3.RouteMatch_Prefix{Prefix: "/"}
		} else {
			all.prefix.PathSeparatedPrefix = p
			out.PathSpecifier = &all.prefix
		}
	}
	out.Headers = headerMatchers(m, in)
	for _, q := range m.QueryParams {
		out.QueryParameters = append(out.QueryParameters, &routev3.QueryParameterMatcher{
			Name:                         q.Name,
			QueryParameterMatchSpecifier: &routev3.QueryParameterMatcher_StringMatch{StringMatch: stringMatch(q)},
		})
	}
	return out
}

// headerMatchers matches the method (as the :method pseudo-header) and the
// headers.
func headerMatchers(m *ir.Match, in *routeMessages) []*routev3.HeaderMatcher {
	n := len(m.Headers)
	if m.Method != "" {
		n++
	}
	if n == 0 {
		return nil
	}
	slab := in.headers.take(n)
	out := in.headerList.take(n)
	for i := range slab {
		all := &slab[i]
		sm := ir.StringMatch{Name: ":method", Value: m.Method}
		if m.Method == "" {
			sm = m.Headers[i]
		} else if i > 0 {
			sm = m.Headers[i-1]
		}
		all.header.Name = sm.Name
		all.header.InvertMatch, all.header.TreatMissingHeaderAsEmpty = sm.Invert, sm.MissingAsEmpty
		if sm.Present {
			all.header.HeaderMatchSpecifier = &routev3.HeaderMatcher_PresentMatch{PresentMatch: true}
			out[i] = &all.header
			continue
		}
		if sm.Regex {
			all.str.MatchPattern = &matcherv3.StringMatcher_SafeRegex{SafeRegex: &matcherv3.RegexMatcher{Regex: sm.Value}}
		} else {
			all.exact.Exact = sm.Value
			all.str.MatchPattern = &all.exact
		}
		all.spec.StringMatch = &all.str
		all.header.HeaderMatchSpecifier = &all.spec
		out[i] = &all.header
	}
	return out
}

func exact(v string) *matcherv3.StringMatcher {
	return &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_Exact{Exact: v}}
}

func stringMatch(s ir.StringMatch) *matcherv3.StringMatcher {
	if s.Regex {
		return &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_SafeRegex{SafeRegex: &matcherv3.RegexMatcher{Regex: s.Value}}}
	}
	return exact(s.Value)
}
