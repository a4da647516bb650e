package httpproxy

import (
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strings"

	contourv1 "github.com/projectcontour/contour/apis/projectcontour/v1"

	"isobar.dev/controller/pkg/ir"
	"isobar.dev/controller/pkg/validate"
)

// includeConditionsValid applies Contour's rules to an include's
// conditions: a prefix (at most one, starting with "/"), headers and query
// parameters; no exact or regex paths.
func includeConditionsValid(conds []contourv1.MatchCondition) error {
	for _, c := range conds {
		if c.Exact != "" {
			return errors.New("exact conditions are not allowed in includes block")
		}
		if c.Regex != "" {
			return errors.New("regex conditions are not allowed in includes block")
		}
	}
	return pathConditionsValid(conds)
}

// pathConditionsValid allows one prefix, exact or regex path per block,
// each starting with "/".
func pathConditionsValid(conds []contourv1.MatchCondition) error {
	n := 0
	for _, c := range conds {
		for _, kp := range [...][2]string{{"prefix", c.Prefix}, {"exact", c.Exact}, {"regex", c.Regex}} {
			kind, p := kp[0], kp[1]
			if p == "" {
				continue
			}
			n++
			if p[0] != '/' {
				return fmt.Errorf("%s conditions must start with /, %s was supplied", kind, p)
			}
			if err := validate.Text(p, kind, "condition"); err != nil {
				return err
			}
			if kind == "regex" {
				if err := validate.Regex("regex", p); err != nil {
					return fmt.Errorf("supplied regex: %s invalid. error: %w", p, err)
				}
			}
		}
	}
	if n > 1 {
		return errors.New("more than one prefix, exact or regex is not allowed in a condition block")
	}
	return nil
}

// headerConditionsValid applies Contour's rules to the header conditions
// of a route (its includes' and its own) or an include: no header has two
// exact conditions (no request could match both), no header is both
// present and notpresent, nor exact and notexact (or contains and
// notcontains) the same value, and every regex compiles.
func headerConditionsValid(conds []contourv1.MatchCondition) error {
	seen := map[contourv1.HeaderMatchCondition]bool{}
	exact := map[string]bool{}
	for _, c := range conds {
		h := c.Header
		if h == nil {
			continue
		}
		name := strings.ToLower(h.Name)
		contradicts := func(other contourv1.HeaderMatchCondition) bool {
			other.Name = name
			return seen[other]
		}
		switch {
		case h.Present && contradicts(contourv1.HeaderMatchCondition{NotPresent: true}),
			h.NotPresent && contradicts(contourv1.HeaderMatchCondition{Present: true}):
			return errors.New("cannot specify contradictory 'present' and 'notpresent' conditions for the same route and header")
		case h.Present || h.NotPresent:
		case h.Exact != "":
			if exact[name] {
				return errors.New("cannot specify duplicate header 'exact match' conditions in the same route")
			}
			exact[name] = true
			if contradicts(contourv1.HeaderMatchCondition{NotExact: h.Exact}) {
				return errors.New("cannot specify contradictory 'exact' and 'notexact' conditions for the same route and header")
			}
		case h.NotExact != "" && contradicts(contourv1.HeaderMatchCondition{Exact: h.NotExact}):
			return errors.New("cannot specify contradictory 'exact' and 'notexact' conditions for the same route and header")
		case h.NotExact != "":
		case h.Contains != "" && contradicts(contourv1.HeaderMatchCondition{NotContains: h.Contains}),
			h.NotContains != "" && contradicts(contourv1.HeaderMatchCondition{Contains: h.NotContains}):
			return errors.New("cannot specify contradictory 'contains' and 'notcontains' conditions for the same route and header")
		case h.Regex != "" && validate.Regex("regex", h.Regex) != nil:
			return errors.New("invalid regular expression specified for 'regex' condition")
		}
		key := *h
		key.Name = name
		seen[key] = true
	}
	return nil
}

// queryConditionsValid applies Contour's rules to query parameter
// conditions: each sets exactly one match, no parameter has two exact
// conditions, and every regex compiles.
func queryConditionsValid(conds []contourv1.MatchCondition) error {
	exact := map[string]bool{}
	for _, c := range conds {
		q := c.QueryParameter
		if q == nil {
			continue
		}
		n := 0
		for _, set := range []bool{q.Exact != "", q.Prefix != "", q.Suffix != "", q.Regex != "", q.Contains != "", q.Present} {
			if set {
				n++
			}
		}
		switch {
		case n == 0:
			return errors.New("must specify at least one query parameter condition")
		case n > 1:
			return errors.New("cannot specify more than one condition in the same match condition branch")
		}
		name := strings.ToLower(q.Name)
		if q.Exact != "" {
			if exact[name] {
				return errors.New("cannot specify duplicate query parameter 'exact match' conditions in the same route")
			}
			exact[name] = true
		}
		if q.Regex != "" && validate.Regex("regex", q.Regex) != nil {
			return errors.New("invalid regular expression specified for 'regex' condition")
		}
	}
	return nil
}

// sameConditions reports whether two includes' conditions are the same,
// in any order. Includes without conditions, or with the prefix "/" alone,
// are never the same as each other: Contour lets trees rely on that.
func sameConditions(a, b []contourv1.MatchCondition) bool {
	if everyPath(a) && everyPath(b) {
		return false
	}
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !slices.ContainsFunc(b, func(c contourv1.MatchCondition) bool { return sameCondition(&a[i], &c) }) {
			return false
		}
	}
	return true
}

// everyPath says conditions match every request: no header or query
// parameter, and no prefix but "/".
func everyPath(conds []contourv1.MatchCondition) bool {
	for _, c := range conds {
		if c.Header != nil || c.QueryParameter != nil || c.Prefix != "" && c.Prefix != "/" {
			return false
		}
	}
	return true
}

func sameCondition(a, b *contourv1.MatchCondition) bool {
	return a.Prefix == b.Prefix && a.Exact == b.Exact && a.Regex == b.Regex &&
		(a.Header == nil) == (b.Header == nil) && (a.Header == nil || *a.Header == *b.Header) &&
		(a.QueryParameter == nil) == (b.QueryParameter == nil) && (a.QueryParameter == nil || *a.QueryParameter == *b.QueryParameter)
}

// match merges the conditions of a route and the includes above it into
// one match, as Contour does: the path conditions concatenate (a regex
// anywhere makes the whole a regex), the last one's kind deciding between
// prefix and exact; headers and query parameters all apply.
func match(conds []contourv1.MatchCondition) (ir.Match, error) {
	isRegex := false
	for _, c := range conds {
		isRegex = isRegex || c.Regex != ""
	}
	path, kind := "", ir.PathStringPrefix
	for _, c := range conds {
		switch {
		case c.Prefix != "" && isRegex:
			path += regexp.QuoteMeta(strings.TrimRight(c.Prefix, "/"))
		case c.Prefix != "":
			path += c.Prefix
			kind = ir.PathStringPrefix
		case c.Exact != "":
			path += c.Exact
			kind = ir.PathExact
		case c.Regex != "" && path != "":
			path += "(?:" + c.Regex + ")"
		case c.Regex != "":
			path += c.Regex
		}
	}
	path = doubleSlashes.ReplaceAllString(path, "/")
	m := ir.Match{PathType: kind, Path: path}
	switch {
	case path == "":
		m = ir.Match{PathType: ir.PathStringPrefix, Path: "/"}
	case isRegex:
		m.PathType = ir.PathRegex
		if err := validate.Regex("merged regex", path); err != nil {
			return m, errors.New("regex invalid after merging with include prefix")
		}
	}
	for _, c := range conds {
		if c.Header != nil {
			sm, err := headerMatch(c.Header)
			if err != nil {
				return m, err
			}
			m.Headers = append(m.Headers, sm)
		}
		if c.QueryParameter != nil {
			sm, err := queryMatch(c.QueryParameter)
			if err != nil {
				return m, err
			}
			m.QueryParams = append(m.QueryParams, sm)
		}
	}
	return m, nil
}

var doubleSlashes = regexp.MustCompile(`//+`)

// headerMatch is a header condition as a string match. The negated
// conditions (notpresent, notexact, notcontains) invert it, and match a
// missing header too for notpresent, or with treatMissingAsEmpty, as
// Contour has them.
func headerMatch(h *contourv1.HeaderMatchCondition) (ir.StringMatch, error) {
	if err := validate.Token(h.Name, "header condition name"); err != nil {
		return ir.StringMatch{}, err
	}
	sm := ir.StringMatch{Name: h.Name}
	switch {
	case h.Present:
		sm.Present = true
	case h.NotPresent:
		sm.Present, sm.Invert = true, true
	case h.Exact != "":
		sm = literal(h.Name, h.Exact, h.IgnoreCase, "", "")
	case h.NotExact != "":
		sm = literal(h.Name, h.NotExact, h.IgnoreCase, "", "")
		sm.Invert = true
	case h.Contains != "":
		sm = literal(h.Name, h.Contains, h.IgnoreCase, ".*", ".*")
	case h.NotContains != "":
		sm = literal(h.Name, h.NotContains, h.IgnoreCase, ".*", ".*")
		sm.Invert = true
	case h.Regex != "":
		if err := validate.Regex("header condition regex", h.Regex); err != nil {
			return sm, err
		}
		sm.Value, sm.Regex = h.Regex, true
	default:
		return sm, fmt.Errorf("header condition %q must set one of present, notpresent, exact, notexact, contains, notcontains or regex", h.Name)
	}
	// Contour treats a missing header as empty on negated value matches
	// only; elsewhere the setting takes no effect.
	sm.MissingAsEmpty = h.TreatMissingAsEmpty && sm.Invert && !sm.Present
	return sm, nil
}

// queryMatch is a query parameter condition as a string match.
func queryMatch(q *contourv1.QueryParameterMatchCondition) (ir.StringMatch, error) {
	if q.Name == "" {
		return ir.StringMatch{}, errors.New("query parameter condition must name a parameter")
	}
	switch {
	case q.Present:
		return ir.StringMatch{Name: q.Name, Value: ".*", Regex: true}, nil
	case q.Exact != "":
		return literal(q.Name, q.Exact, q.IgnoreCase, "", ""), nil
	case q.Prefix != "":
		return literal(q.Name, q.Prefix, q.IgnoreCase, "", ".*"), nil
	case q.Suffix != "":
		return literal(q.Name, q.Suffix, q.IgnoreCase, ".*", ""), nil
	case q.Contains != "":
		return literal(q.Name, q.Contains, q.IgnoreCase, ".*", ".*"), nil
	case q.Regex != "":
		if err := validate.Regex("query parameter condition regex", q.Regex); err != nil {
			return ir.StringMatch{}, err
		}
		return ir.StringMatch{Name: q.Name, Value: q.Regex, Regex: true}, nil
	}
	return ir.StringMatch{}, fmt.Errorf("query parameter condition %q must set one of present, exact, prefix, suffix, contains or regex", q.Name)
}

// literal matches a value, or a part of it when before or after is ".*";
// exactly and case-sensitively as a plain string where it can.
func literal(name, value string, ignoreCase bool, before, after string) ir.StringMatch {
	if !ignoreCase && before == "" && after == "" {
		return ir.StringMatch{Name: name, Value: value}
	}
	re := before + regexp.QuoteMeta(value) + after
	if ignoreCase {
		re = "(?i)" + re
	}
	return ir.StringMatch{Name: name, Value: re, Regex: true}
}

// refuse returns a check of a struct type T whose fields but served (by
// their JSON names) are not served yet: it returns the JSON name of the
// first such field that is set, or "". Every field of HTTPProxy takes
// effect or is refused this way: none is ignored silently. The fields are
// found once, when the check is made.
func refuse[T any](served ...string) func(v *T) string {
	rt := reflect.TypeFor[T]()
	var index []int
	var names []string
	for i := range rt.NumField() {
		name, _, _ := strings.Cut(rt.Field(i).Tag.Get("json"), ",")
		if name == "" || name == "-" || slices.Contains(served, name) {
			continue
		}
		index, names = append(index, i), append(names, name)
	}
	return func(v *T) string {
		rv := reflect.ValueOf(v).Elem()
		for k, i := range index {
			if !rv.Field(i).IsZero() {
				return names[k]
			}
		}
		return ""
	}
}

// The fields of each part of an HTTPProxy that are not served yet.
var (
	refuseSpec        = refuse[contourv1.HTTPProxySpec]("virtualhost", "routes", "includes", "ingressClassName", "tcpproxy")
	refuseVirtualHost = refuse[contourv1.VirtualHost]("fqdn", "tls", "corsPolicy", "ipAllowPolicy", "ipDenyPolicy", "rateLimitPolicy", "authorization",
		"jwtProviders")
	refuseCORS = refuse[contourv1.CORSPolicy]("allowCredentials", "allowOrigin", "allowMethods", "allowHeaders", "exposeHeaders", "maxAge", "allowPrivateNetwork")
	refuseTLS  = refuse[contourv1.TLS]("secretName", "minimumProtocolVersion", "maximumProtocolVersion", "clientValidation", "passthrough",
		"enableFallbackCertificate")
	refuseTCPProxy         = refuse[contourv1.TCPProxy]("services", "include", "includes", "loadBalancerPolicy", "healthCheckPolicy")
	refuseTCPService       = refuse[contourv1.Service](append([]string{"name", "port", "weight", "protocol", "validation", "slowStartPolicy", "healthPort"}, connectionless...)...)
	refuseClientValidation = refuse[contourv1.DownstreamValidation]("caSecret", "optionalClientCertificate", "skipClientCertValidation",
		"crlSecret", "crlOnlyVerifyLeafCert", "forwardClientCertificate")
	refuseRoute = refuse[contourv1.Route]("conditions", "services", "permitInsecure", "enableWebsockets",
		"requestHeadersPolicy", "responseHeadersPolicy", "timeoutPolicy", "requestRedirectPolicy", "directResponsePolicy",
		"retryPolicy", "pathRewritePolicy", "loadBalancerPolicy", "ipAllowPolicy", "ipDenyPolicy", "rateLimitPolicy", "healthCheckPolicy",
		"internalRedirectPolicy", "authPolicy", "jwtVerificationPolicy", "cookieRewritePolicies")
	refuseService = refuse[contourv1.Service]("name", "port", "weight", "mirror", "protocol", "validation", "requestHeadersPolicy", "responseHeadersPolicy",
		"slowStartPolicy", "healthPort", "cookieRewritePolicies")
)
