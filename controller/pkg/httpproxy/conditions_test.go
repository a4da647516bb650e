package httpproxy

import (
	"fmt"
	"strings"
	"testing"

	contourv1 "github.com/projectcontour/contour/apis/projectcontour/v1"
)

// Conditions down an inclusion tree merge as Contour merges them.
func TestMatchMergesConditions(t *testing.T) {
	header := func(h contourv1.HeaderMatchCondition) contourv1.MatchCondition {
		return contourv1.MatchCondition{Header: &h}
	}
	query := func(q contourv1.QueryParameterMatchCondition) contourv1.MatchCondition {
		return contourv1.MatchCondition{QueryParameter: &q}
	}
	for _, tc := range []struct {
		name  string
		conds []contourv1.MatchCondition
		want  string
	}{
		{"none is every path", nil, "StringPrefix / [] []"},
		{"prefixes concatenate as strings", []contourv1.MatchCondition{{Prefix: "/api"}, {Prefix: "/v1"}}, "StringPrefix /api/v1 [] []"},
		{"double slashes collapse", []contourv1.MatchCondition{{Prefix: "/api/"}, {Prefix: "/v1"}}, "StringPrefix /api/v1 [] []"},
		{"the last kind decides", []contourv1.MatchCondition{{Prefix: "/api"}, {Exact: "/health"}}, "Exact /api/health [] []"},
		{"a regex makes the whole a regex", []contourv1.MatchCondition{{Prefix: "/a.b/"}, {Regex: "/[0-9]+"}}, `Regex /a\.b(?:/[0-9]+) [] []`},
		{"headers", []contourv1.MatchCondition{
			header(contourv1.HeaderMatchCondition{Name: "x-a", Exact: "v"}),
			header(contourv1.HeaderMatchCondition{Name: "x-b", Contains: "a.b", IgnoreCase: true}),
			header(contourv1.HeaderMatchCondition{Name: "x-c", Present: true}),
			header(contourv1.HeaderMatchCondition{Name: "x-d", NotPresent: true}),
			header(contourv1.HeaderMatchCondition{Name: "x-e", NotExact: "v", TreatMissingAsEmpty: true}),
			header(contourv1.HeaderMatchCondition{Name: "x-f", NotContains: "v"}),
			header(contourv1.HeaderMatchCondition{Name: "x-g", Exact: "v", TreatMissingAsEmpty: true}),
		}, `StringPrefix / [{x-a v false false false false} {x-b (?i).*a\.b.* true false false false} {x-c  false true false false} ` +
			`{x-d  false true true false} {x-e v false false true true} {x-f .*v.* true false true false} {x-g v false false false false}] []`},
		{"query parameters", []contourv1.MatchCondition{
			query(contourv1.QueryParameterMatchCondition{Name: "p", Prefix: "ab"}),
			query(contourv1.QueryParameterMatchCondition{Name: "s", Suffix: "z"}),
		}, "StringPrefix / [] [{p ab.* true false false false} {s .*z true false false false}]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := match(tc.conds)
			if err != nil {
				t.Fatal(err)
			}
			if got := fmt.Sprintf("%s %s %v %v", m.PathType, m.Path, m.Headers, m.QueryParams); got != tc.want {
				t.Errorf("match(%v) = %s, want %s", tc.conds, got, tc.want)
			}
		})
	}
}

// Dynamic header values are escaped as Contour escapes them: its own
// variables substituted, Envoy's allowed ones kept, any other "%" literal.
func TestDynamicHeader(t *testing.T) {
	vars := contourVars{namespace: "shop", service: "50%off", port: 80}
	for _, tc := range []struct{ in, want string }{
		{"plain", "plain"},
		{"100%", "100%%"},
		{"%CONTOUR_NAMESPACE%", "shop"},
		{"%CONTOUR_SERVICE_NAME%", "50%%off"},
		{"%CONTOUR_SERVICE_PORT%", "80"},
		{"%HOSTNAME%/%PROTOCOL%", "%HOSTNAME%/%PROTOCOL%"},
		{"%REQ(x-a)%", "%REQ(x-a)%"},
		{"%REQ(x-a?x-b):10%", "%REQ(x-a?x-b):10%"},
		{"%REQ(x a)%", "%%REQ(x a)%%"},
		{"%UNKNOWN%", "%%UNKNOWN%%"},
	} {
		h := dynamicHeader("x", tc.in, vars)
		if h.Value != tc.want || h.Formatted != (tc.in != "plain") {
			t.Errorf("%q: %+v, want %q", tc.in, h, tc.want)
		}
	}
}

// Contour's headerMatchConditionsValid and queryParameterMatchConditionsValid
// cases: a route no request could match is refused.
func TestConditionsValid(t *testing.T) {
	h := func(hc contourv1.HeaderMatchCondition) contourv1.MatchCondition {
		return contourv1.MatchCondition{Header: &hc}
	}
	q := func(qc contourv1.QueryParameterMatchCondition) contourv1.MatchCondition {
		return contourv1.MatchCondition{QueryParameter: &qc}
	}
	for _, tc := range []struct {
		name  string
		conds []contourv1.MatchCondition
		want  string
	}{
		{"two headers exact", []contourv1.MatchCondition{h(contourv1.HeaderMatchCondition{Name: "x-a", Exact: "1"}), h(contourv1.HeaderMatchCondition{Name: "x-b", Exact: "1"})}, ""},
		{"one header exact twice", []contourv1.MatchCondition{h(contourv1.HeaderMatchCondition{Name: "x-a", Exact: "1"}), h(contourv1.HeaderMatchCondition{Name: "X-A", Exact: "2"})}, "duplicate header 'exact match'"},
		{"present and notpresent", []contourv1.MatchCondition{h(contourv1.HeaderMatchCondition{Name: "x-a", Present: true}), h(contourv1.HeaderMatchCondition{Name: "x-a", NotPresent: true})}, "'present' and 'notpresent'"},
		{"exact and notexact", []contourv1.MatchCondition{h(contourv1.HeaderMatchCondition{Name: "x-a", NotExact: "1"}), h(contourv1.HeaderMatchCondition{Name: "x-a", Exact: "1"})}, "'exact' and 'notexact'"},
		{"exact and notexact of others", []contourv1.MatchCondition{h(contourv1.HeaderMatchCondition{Name: "x-a", NotExact: "2"}), h(contourv1.HeaderMatchCondition{Name: "x-a", Exact: "1"})}, ""},
		{"contains and notcontains", []contourv1.MatchCondition{h(contourv1.HeaderMatchCondition{Name: "x-a", Contains: "1"}), h(contourv1.HeaderMatchCondition{Name: "x-a", NotContains: "1"})}, "'contains' and 'notcontains'"},
		{"bad header regex", []contourv1.MatchCondition{h(contourv1.HeaderMatchCondition{Name: "x-a", Regex: "["})}, "invalid regular expression"},
		{"query exact twice", []contourv1.MatchCondition{q(contourv1.QueryParameterMatchCondition{Name: "a", Exact: "1"}), q(contourv1.QueryParameterMatchCondition{Name: "A", Exact: "2"})}, "duplicate query parameter 'exact match'"},
		{"query two matches", []contourv1.MatchCondition{q(contourv1.QueryParameterMatchCondition{Name: "a", Exact: "1", Prefix: "1"})}, "more than one condition"},
		{"query no match", []contourv1.MatchCondition{q(contourv1.QueryParameterMatchCondition{Name: "a"})}, "at least one"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := headerConditionsValid(tc.conds)
			if err == nil {
				err = queryConditionsValid(tc.conds)
			}
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("error %v, want one saying %q", err, tc.want)
			}
		})
	}
}

// Includes without conditions, or with the prefix "/" alone, are not
// duplicates of each other (Contour's includeMatchConditionsIdentical).
func TestSameConditions(t *testing.T) {
	slash := []contourv1.MatchCondition{{Prefix: "/"}}
	api := []contourv1.MatchCondition{{Prefix: "/api"}}
	for _, tc := range []struct {
		a, b []contourv1.MatchCondition
		want bool
	}{
		{nil, nil, false},
		{slash, slash, false},
		{nil, slash, false},
		{api, api, true},
		{api, slash, false},
	} {
		if got := sameConditions(tc.a, tc.b); got != tc.want {
			t.Errorf("sameConditions(%v, %v) = %t, want %t", tc.a, tc.b, got, tc.want)
		}
	}
}
