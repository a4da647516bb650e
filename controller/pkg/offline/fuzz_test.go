package offline

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"isobar.dev/controller/pkg/envoysim"
	"isobar.dev/controller/pkg/resources"
)

// FuzzLoadAndTranslate feeds arbitrary YAML through the loader and both
// stages: nothing may panic, and whatever translates must pass the Envoy
// checks (Translate runs them). Seeded with the golden inputs.
func FuzzLoadAndTranslate(f *testing.F) {
	inputs, _ := filepath.Glob("testdata/*.in.yaml")
	for _, in := range inputs {
		data, err := os.ReadFile(in)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		res := &resources.Resources{}
		if _, err := res.Load("fuzz", bytes.NewReader(data)); err != nil {
			return
		}
		result, err := Translate(res, Options{})
		if err != nil {
			t.Fatalf("translation produced invalid Envoy configuration: %v", err)
		}
		simulate(t, result)
		// A Translator that saw the snapshot without its first HTTPRoute
		// and GRPCRoute must then give what a fresh translation gives.
		before := *res
		if len(res.HTTPRoutes) > 0 {
			before.HTTPRoutes = res.HTTPRoutes[1:]
		}
		if len(res.GRPCRoutes) > 0 {
			before.GRPCRoutes = res.GRPCRoutes[1:]
		}
		inc := newIncremental()
		inc.check(t, "without the first routes", &before)
		inc.check(t, "with them", res)
	})
}

// FuzzHTTPRoute varies the user-controlled strings and numbers of an
// HTTPRoute that the API server's schema would normally check, since the
// translator must cope without it (offline input, or a schema that allows
// more than Envoy does).
func FuzzHTTPRoute(f *testing.F) {
	f.Add("/api", "x-version", "2", "app.example.com", "debug", "^/v[0-9]+", int32(1), 301, "new.example.com", "/new", "GET")
	f.Add("", "", "", "", "", "", int32(0), 0, "", "", "")
	f.Add("api", "bad header", "\x00", "*.example.com", "q p", "([", int32(-5), 999, "bad host!", "no-slash", "NOPE")
	f.Fuzz(func(t *testing.T, path, header, value, hostname, query, regex string, weight int32, code int, redirectHost, replace, method string) {
		res := fuzzResources(path, header, value, hostname, query, regex, weight, code, redirectHost, replace, method)
		result, err := Translate(res, Options{})
		if err != nil {
			t.Fatalf("translation produced invalid Envoy configuration: %v", err)
		}
		simulate(t, result)
		// The route arriving in a Translator that has seen the snapshot
		// without it must give what a fresh translation gives.
		before := *res
		before.HTTPRoutes = slices.DeleteFunc(slices.Clone(res.HTTPRoutes), func(r *gatewayv1.HTTPRoute) bool { return r.Name == "fuzz" })
		inc := newIncremental()
		inc.check(t, "without the route", &before)
		inc.check(t, "with the route", res)
	})
}

func fuzzResources(path, header, value, hostname, query, regex string, weight int32, code int, redirectHost, replace, method string) *resources.Resources {
	exact, prefix, re := gatewayv1.PathMatchExact, gatewayv1.PathMatchPathPrefix, gatewayv1.PathMatchRegularExpression
	hre := gatewayv1.HeaderMatchRegularExpression
	m := gatewayv1.HTTPMethod(method)
	port := gatewayv1.PortNumber(80)
	full, pfx := gatewayv1.FullPathHTTPPathModifier, gatewayv1.PrefixMatchHTTPPathModifier
	rh := gatewayv1.PreciseHostname(redirectHost)
	hostnames := []gatewayv1.Hostname{}
	if hostname != "" {
		hostnames = append(hostnames, gatewayv1.Hostname(hostname))
	}
	route := &gatewayv1.HTTPRoute{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "fuzz"},
		Spec: gatewayv1.HTTPRouteSpec{
			CommonRouteSpec: gatewayv1.CommonRouteSpec{ParentRefs: []gatewayv1.ParentReference{{Name: "web"}}},
			Hostnames:       hostnames,
			Rules: []gatewayv1.HTTPRouteRule{
				{
					Matches: []gatewayv1.HTTPRouteMatch{
						{Path: &gatewayv1.HTTPPathMatch{Type: &exact, Value: &path}, Method: &m},
						{Path: &gatewayv1.HTTPPathMatch{Type: &prefix, Value: &path},
							Headers:     []gatewayv1.HTTPHeaderMatch{{Name: gatewayv1.HTTPHeaderName(header), Value: value}, {Type: &hre, Name: gatewayv1.HTTPHeaderName(header), Value: regex}},
							QueryParams: []gatewayv1.HTTPQueryParamMatch{{Name: gatewayv1.HTTPHeaderName(query), Value: value}}},
						{Path: &gatewayv1.HTTPPathMatch{Type: &re, Value: &regex}},
					},
					Filters: []gatewayv1.HTTPRouteFilter{{
						Type: gatewayv1.HTTPRouteFilterRequestHeaderModifier,
						RequestHeaderModifier: &gatewayv1.HTTPHeaderFilter{
							Set:    []gatewayv1.HTTPHeader{{Name: gatewayv1.HTTPHeaderName(header), Value: value}},
							Remove: []string{header},
						},
					}, {
						Type:       gatewayv1.HTTPRouteFilterURLRewrite,
						URLRewrite: &gatewayv1.HTTPURLRewriteFilter{Hostname: &rh, Path: &gatewayv1.HTTPPathModifier{Type: pfx, ReplacePrefixMatch: &replace}},
					}},
					BackendRefs: []gatewayv1.HTTPBackendRef{{BackendRef: gatewayv1.BackendRef{
						BackendObjectReference: gatewayv1.BackendObjectReference{Name: "svc", Port: &port},
						Weight:                 &weight,
					}}},
					SessionPersistence: &gatewayv1.SessionPersistence{SessionName: &query},
				},
				{
					Matches: []gatewayv1.HTTPRouteMatch{{Path: &gatewayv1.HTTPPathMatch{Type: &prefix, Value: &replace}}},
					Filters: []gatewayv1.HTTPRouteFilter{{
						Type: gatewayv1.HTTPRouteFilterExternalAuth,
						ExternalAuth: &gatewayv1.HTTPExternalAuthFilter{ExternalAuthProtocol: gatewayv1.HTTPRouteExternalAuthHTTPProtocol,
							BackendRef: gatewayv1.BackendObjectReference{Name: "svc", Port: &port}, HTTPAuthConfig: &gatewayv1.HTTPAuthConfig{Path: replace}},
					}, {
						Type: gatewayv1.HTTPRouteFilterRequestRedirect,
						RequestRedirect: &gatewayv1.HTTPRequestRedirectFilter{
							Hostname: &rh, StatusCode: &code,
							Path: &gatewayv1.HTTPPathModifier{Type: full, ReplaceFullPath: &replace},
						},
					}},
				},
			},
		},
	}
	listenerHost := gatewayv1.Hostname(hostname)
	return &resources.Resources{
		GatewayClasses: []*gatewayv1.GatewayClass{{
			ObjectMeta: metav1.ObjectMeta{Name: "isobar"},
			Spec:       gatewayv1.GatewayClassSpec{ControllerName: DefaultControllerName},
		}},
		Gateways: []*gatewayv1.Gateway{{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"},
			Spec: gatewayv1.GatewaySpec{GatewayClassName: "isobar", Listeners: []gatewayv1.Listener{
				{Name: "http", Protocol: gatewayv1.HTTPProtocolType, Port: 80},
				{Name: "named", Protocol: gatewayv1.HTTPProtocolType, Port: 80, Hostname: &listenerHost},
			}},
		}},
		HTTPRoutes: []*gatewayv1.HTTPRoute{route},
		Services:   fuzzServices(),
	}
}

// simulate asks the simulator about a few requests on every translated
// Gateway: whatever the translator produced, the simulator must not panic
// and must not refuse a field (every field our xDS uses is one it
// interprets).
func simulate(t *testing.T, result *Result) {
	t.Helper()
	for _, x := range result.XDS {
		sim, err := envoysim.New(x.Listeners, x.Routes, x.Clusters, x.Endpoints, x.Secrets)
		if err != nil {
			t.Fatalf("simulator: %v", err)
		}
		for _, l := range x.Listeners {
			port := l.GetAddress().GetSocketAddress().GetPortValue()
			for _, req := range []envoysim.Request{
				{Port: port, Method: "GET", Authority: "app.example.com", Path: "/api/x?debug=1", ClientAddress: "192.0.2.1",
					Headers: []envoysim.Header{{Name: "x-version", Value: "2"}, {Name: "cookie", Value: "debug=MTAuMC4wLjE6ODA=; x=\"eyJhZGRyZXNzIjoiMSJ9\""}}},
				{Port: port, TLS: true, SNI: "app.example.com", ALPN: []string{"h2"}, Method: "POST", Authority: "app.example.com", Path: "/", ClientAddress: "2001:db8::1"},
				{Port: port, UDP: true},
			} {
				if _, err := sim.Simulate(req); err != nil && strings.Contains(err.Error(), "does not interpret") {
					t.Fatalf("simulator: %v", err)
				}
			}
		}
	}
}
