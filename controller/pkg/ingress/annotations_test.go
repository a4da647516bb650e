package ingress

import (
	"reflect"
	"testing"
	"time"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"isobar.dev/controller/pkg/ir"
)

// num-retries as Contour's annotation.NumRetries reads it.
func TestNumRetries(t *testing.T) {
	for in, want := range map[string]int{"": 1, "0": 1, "1": 1, "-1": 0, "-2": 1, "3": 3, "x": 1, "99999999999": 1} {
		if got := numRetries(in); got != want {
			t.Errorf("numRetries(%q) = %d, want %d", in, got, want)
		}
	}
}

func TestPathMatch(t *testing.T) {
	prefix, exact, specific, other := networkingv1.PathTypePrefix, networkingv1.PathTypeExact, networkingv1.PathTypeImplementationSpecific, networkingv1.PathType("Other")
	for _, tc := range []struct {
		path    string
		typ     *networkingv1.PathType
		want    ir.Match
		problem bool
	}{
		{"/foo", &exact, ir.Match{PathType: ir.PathExact, Path: "/foo"}, false},
		{"/foo/", &prefix, ir.Match{PathType: ir.PathPrefix, Path: "/foo"}, false},
		{"/", &prefix, ir.Match{PathType: ir.PathPrefix, Path: "/"}, false},
		{"/foo", &specific, ir.Match{PathType: ir.PathStringPrefix, Path: "/foo"}, false},
		{"/foo", nil, ir.Match{PathType: ir.PathStringPrefix, Path: "/foo"}, false},
		{"/v[0-9]+", &specific, ir.Match{PathType: ir.PathRegex, Path: "/v[0-9]+"}, false},
		{"/a%20b", nil, ir.Match{PathType: ir.PathRegex, Path: "/a%20b"}, false},
		{"/bad[", &specific, ir.Match{}, true},
		{"/foo", &other, ir.Match{}, true},
	} {
		got, problem := pathMatch(tc.path, tc.typ)
		if !reflect.DeepEqual(got, tc.want) || (problem != "") != tc.problem {
			t.Errorf("pathMatch(%q, %v) = %+v, %q; want %+v, a problem: %t", tc.path, tc.typ, got, problem, tc.want, tc.problem)
		}
	}
}

func TestPolicy(t *testing.T) {
	for _, tc := range []struct {
		name        string
		annotations map[string]string
		path        string
		want        ir.Route
		problems    int
	}{
		{"none", nil, "/", ir.Route{WebsocketsDisabled: true}, 0},
		{"timeout", map[string]string{ResponseTimeout: "30s"}, "/", ir.Route{Timeout: 30 * time.Second, WebsocketsDisabled: true}, 0},
		{"older name", map[string]string{RequestTimeout: "infinity"}, "/", ir.Route{TimeoutDisabled: true, WebsocketsDisabled: true}, 0},
		{"response-timeout first", map[string]string{ResponseTimeout: "1s", RequestTimeout: "2s"}, "/", ir.Route{Timeout: time.Second, WebsocketsDisabled: true}, 0},
		{"bad timeout", map[string]string{ResponseTimeout: "soon"}, "/", ir.Route{WebsocketsDisabled: true}, 1},
		{"retries", map[string]string{RetryOn: "5xx, reset", NumRetries: "-1", PerTryTimeout: "2s"}, "/",
			ir.Route{Retry: &ir.Retry{Attempts: 0, On: []string{"5xx", "reset"}}, BackendTimeout: 2 * time.Second, WebsocketsDisabled: true}, 0},
		{"retries need retry-on", map[string]string{NumRetries: "3", PerTryTimeout: "2s"}, "/", ir.Route{WebsocketsDisabled: true}, 0},
		{"only unknown conditions", map[string]string{RetryOn: "sometimes"}, "/", ir.Route{WebsocketsDisabled: true}, 1},
		{"websocket path", map[string]string{WebsocketRoutes: " /ws , /chat"}, "/chat", ir.Route{}, 0},
		{"websocket other path", map[string]string{WebsocketRoutes: "/ws"}, "/chat", ir.Route{WebsocketsDisabled: true}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := policyOf(&networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Annotations: tc.annotations}})
			var r ir.Route
			p.apply(&r, tc.path)
			if !reflect.DeepEqual(r, tc.want) || len(p.problems) != tc.problems {
				t.Errorf("route %+v, problems %q; want %+v, %d problems", r, p.problems, tc.want, tc.problems)
			}
		})
	}
}

func TestHTTPAllowed(t *testing.T) {
	for v, want := range map[string]bool{"": true, "true": true, "false": false, "False": true} {
		p := policyOf(&networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{AllowHTTP: v}}})
		if p.httpAllowed != want {
			t.Errorf("allow-http %q: served over HTTP %t, want %t", v, p.httpAllowed, want)
		}
	}
}

func TestTLSVersions(t *testing.T) {
	for _, tc := range []struct {
		minimum, maximum string
		want             *ir.ChainTLS
		problems         int
	}{
		{"", "", nil, 0},
		{"1.3", "", &ir.ChainTLS{MinTLS: "1.3"}, 0},
		{"1.1", "1.2", &ir.ChainTLS{MaxTLS: "1.2"}, 1},
		{"1.3", "1.2", nil, 1},
	} {
		ing := &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{TLSMinimumProtocolVersion: tc.minimum, TLSMaximumProtocolVersion: tc.maximum}}}
		_, _, problems, _ := TLSVersions(ing)
		if got := ChainTLS(ing); !reflect.DeepEqual(got, tc.want) || len(problems) != tc.problems {
			t.Errorf("%q..%q: %+v, %q; want %+v, %d problems", tc.minimum, tc.maximum, got, problems, tc.want, tc.problems)
		}
	}
}
