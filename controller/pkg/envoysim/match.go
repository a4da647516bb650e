package envoysim

import (
	"fmt"
	"regexp"
	"strings"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
)

// routeMatches applies a RouteMatch to a request, following
// route_components.proto (RouteMatch): one path specifier, then every
// header matcher and every query parameter matcher must match.
func routeMatches(m *routev3.RouteMatch, r *httpRequest) (matched string, ok bool, err error) {
	if err := understand(m, "prefix", "path", "safe_regex", "path_separated_prefix", "case_sensitive", "headers", "query_parameters", "grpc"); err != nil {
		return "", false, err
	}
	caseSensitive := m.GetCaseSensitive() == nil || m.GetCaseSensitive().GetValue()
	path := r.pathOnly()
	eq := func(a, b string) bool { return a == b || !caseSensitive && strings.EqualFold(a, b) }
	switch spec := m.GetPathSpecifier().(type) {
	case *routev3.RouteMatch_Prefix:
		// "the prefix must match the beginning of the :path header",
		// query included.
		p := spec.Prefix
		if len(r.path) < len(p) || !eq(r.path[:len(p)], p) {
			return "", false, nil
		}
		matched = r.path[:len(p)]
	case *routev3.RouteMatch_Path:
		// "must exactly match the :path header once the query string is
		// removed".
		if !eq(path, spec.Path) {
			return "", false, nil
		}
		matched = path
	case *routev3.RouteMatch_PathSeparatedPrefix:
		// The path (query and fragment removed) equals the prefix or
		// continues it with a '/'.
		p := spec.PathSeparatedPrefix
		if len(path) < len(p) || !eq(path[:len(p)], p) || len(path) > len(p) && path[len(p)] != '/' {
			return "", false, nil
		}
		matched = path[:len(p)]
	case *routev3.RouteMatch_SafeRegex:
		// "The entire path (without the query string) must match the
		// regex."
		re, err := fullRegex(spec.SafeRegex)
		if err != nil {
			return "", false, err
		}
		if !re.MatchString(path) {
			return "", false, nil
		}
		matched = path
	default:
		return "", false, fmt.Errorf("route match has an unsupported path specifier %T", spec)
	}
	if m.GetGrpc() != nil && !IsGRPC(r.header("content-type")) {
		return "", false, nil
	}
	for _, h := range m.GetHeaders() {
		ok, err := headerMatches(h, r)
		if err != nil || !ok {
			return "", false, err
		}
	}
	for _, q := range m.GetQueryParameters() {
		ok, err := queryMatches(q, r)
		if err != nil || !ok {
			return "", false, err
		}
	}
	return matched, true, nil
}

// headerMatches follows HeaderMatcher: several values of one header are
// joined with ',' before matching. A missing header (unless
// treat_missing_header_as_empty) matches only present_match: false, or,
// inverted, present_match: true; invert_match flips every other result.
func headerMatches(h *routev3.HeaderMatcher, r *httpRequest) (bool, error) {
	if err := understand(h, "name", "string_match", "present_match", "invert_match", "treat_missing_header_as_empty",
		"exact_match", "safe_regex_match", "prefix_match", "suffix_match", "contains_match"); err != nil {
		return false, err
	}
	value, present := r.headerValues(h.GetName())
	if !present && h.GetTreatMissingHeaderAsEmpty() {
		value, present = "", true
	}
	presentMatch, isPresent := h.GetHeaderMatchSpecifier().(*routev3.HeaderMatcher_PresentMatch)
	if !present {
		return isPresent && presentMatch.PresentMatch == h.GetInvertMatch(), nil
	}
	var ok bool
	switch spec := h.GetHeaderMatchSpecifier().(type) {
	case nil:
		ok = true
	case *routev3.HeaderMatcher_PresentMatch:
		ok = spec.PresentMatch
	case *routev3.HeaderMatcher_StringMatch:
		var err error
		if ok, err = stringMatches(spec.StringMatch, value); err != nil {
			return false, err
		}
	case *routev3.HeaderMatcher_ExactMatch:
		ok = value == spec.ExactMatch
	case *routev3.HeaderMatcher_PrefixMatch:
		ok = strings.HasPrefix(value, spec.PrefixMatch)
	case *routev3.HeaderMatcher_SuffixMatch:
		ok = strings.HasSuffix(value, spec.SuffixMatch)
	case *routev3.HeaderMatcher_ContainsMatch:
		ok = strings.Contains(value, spec.ContainsMatch)
	case *routev3.HeaderMatcher_SafeRegexMatch:
		re, err := fullRegex(spec.SafeRegexMatch)
		if err != nil {
			return false, err
		}
		ok = re.MatchString(value)
	default:
		return false, fmt.Errorf("header matcher for %q: unsupported %T", h.GetName(), spec)
	}
	return ok != h.GetInvertMatch(), nil
}

// queryMatches follows QueryParameterMatcher: the first parameter of that
// name is matched; present_match only asks that it exists.
func queryMatches(q *routev3.QueryParameterMatcher, r *httpRequest) (bool, error) {
	if err := understand(q, "name", "string_match", "present_match"); err != nil {
		return false, err
	}
	value, present := r.query(q.GetName())
	switch spec := q.GetQueryParameterMatchSpecifier().(type) {
	case nil:
		return present, nil
	case *routev3.QueryParameterMatcher_PresentMatch:
		return present == spec.PresentMatch, nil
	case *routev3.QueryParameterMatcher_StringMatch:
		if !present {
			return false, nil
		}
		return stringMatches(spec.StringMatch, value)
	}
	return false, fmt.Errorf("query parameter matcher for %q is not supported", q.GetName())
}

// stringMatches follows StringMatcher; regular expressions must match the
// whole value, ignore_case does not apply to them.
func stringMatches(m *matcherv3.StringMatcher, v string) (bool, error) {
	if err := understand(m, "exact", "prefix", "suffix", "contains", "safe_regex", "ignore_case"); err != nil {
		return false, err
	}
	fold := func(s string) string {
		if m.GetIgnoreCase() {
			return strings.ToLower(s)
		}
		return s
	}
	switch p := m.GetMatchPattern().(type) {
	case *matcherv3.StringMatcher_Exact:
		return fold(v) == fold(p.Exact), nil
	case *matcherv3.StringMatcher_Prefix:
		return strings.HasPrefix(fold(v), fold(p.Prefix)), nil
	case *matcherv3.StringMatcher_Suffix:
		return strings.HasSuffix(fold(v), fold(p.Suffix)), nil
	case *matcherv3.StringMatcher_Contains:
		return strings.Contains(fold(v), fold(p.Contains)), nil
	case *matcherv3.StringMatcher_SafeRegex:
		re, err := fullRegex(p.SafeRegex)
		if err != nil {
			return false, err
		}
		return re.MatchString(v), nil
	}
	return false, fmt.Errorf("string matcher %T is not supported", m.GetMatchPattern())
}

// fullRegex compiles an RE2 regular expression anchored at both ends, as
// Envoy's safe_regex matchers match whole values.
func fullRegex(m *matcherv3.RegexMatcher) (*regexp.Regexp, error) {
	if err := understand(m, "regex", "google_re2"); err != nil {
		return nil, err
	}
	re, err := regexp.Compile(`^(?:` + m.GetRegex() + `)$`)
	if err != nil {
		return nil, fmt.Errorf("regex %q: %w", m.GetRegex(), err)
	}
	return re, nil
}
