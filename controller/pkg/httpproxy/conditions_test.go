package httpproxy

import (
	"fmt"
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
