package dataplane

import (
	"fmt"
	"io"
	"net/http"
	"strconv"
	"testing"
	"time"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	routerv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"isobar.dev/e2e/harness"
)

// A backend's redirect that the route's internal redirect policy takes is
// followed by Envoy over real connections: the client gets the answer of
// the Location's route, whose backend is told the original URL; a status
// the policy does not name reaches the client as it is.
func TestInternalRedirectFollowed(t *testing.T) {
	var port int
	be := backend(t, func(p *http.Protocols) { p.SetHTTP1(true) }, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/old":
			code, _ := strconv.Atoi(r.URL.Query().Get("code"))
			w.Header().Set("Location", fmt.Sprintf("http://127.0.0.1:%d/new", port))
			w.WriteHeader(code)
		default:
			fmt.Fprintf(w, "%s %s from %s", r.Method, r.URL.Path, r.Header.Get("X-Envoy-Original-Url"))
		}
	})
	port = harness.FreePort(t)
	route := func(prefix string, policy *routev3.InternalRedirectPolicy) *routev3.Route {
		return &routev3.Route{
			Name:  prefix,
			Match: &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: prefix}},
			Action: &routev3.Route_Route{Route: &routev3.RouteAction{
				ClusterSpecifier:       &routev3.RouteAction_Cluster{Cluster: "backend"},
				InternalRedirectPolicy: policy,
			}},
		}
	}
	hcm := &hcmv3.HttpConnectionManager{
		StatPrefix: "test",
		RouteSpecifier: &hcmv3.HttpConnectionManager_RouteConfig{RouteConfig: &routev3.RouteConfiguration{
			Name: "test",
			VirtualHosts: []*routev3.VirtualHost{{Name: "all", Domains: []string{"*"}, Routes: []*routev3.Route{
				route("/old", &routev3.InternalRedirectPolicy{MaxInternalRedirects: wrapperspb.UInt32(1), RedirectResponseCodes: []uint32{302, 303}}),
				route("/", nil),
			}}},
		}},
		HttpFilters: []*hcmv3.HttpFilter{{Name: "envoy.filters.http.router", ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: typed(t, &routerv3.Router{})}}},
	}
	l := hcmListener(t, "test", port, hcm)
	staticEnvoy(t, l, backendCluster(t, be, false))
	get(t, port, "/") // the listener is bound and the backend answers

	client := &http.Client{Timeout: 5 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for _, tc := range []struct {
		method, code string
		status       int
		body         string
	}{
		{"GET", "302", http.StatusOK, fmt.Sprintf("GET /new from http://127.0.0.1:%d/old?code=302", port)},
		{"POST", "303", http.StatusOK, fmt.Sprintf("GET /new from http://127.0.0.1:%d/old?code=303", port)},
		{"GET", "301", http.StatusMovedPermanently, ""},
	} {
		req, err := http.NewRequest(tc.method, fmt.Sprintf("http://127.0.0.1:%d/old?code=%s", port, tc.code), nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.status || string(body) != tc.body {
			t.Errorf("%s /old answered %s: the client got %d %q, want %d %q", tc.method, tc.code, resp.StatusCode, body, tc.status, tc.body)
		}
	}
}
