package dataplane

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	extauthzv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_authz/v3"
	routerv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	authv3 "github.com/envoyproxy/go-control-plane/envoy/service/auth/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"

	"isobar.dev/e2e/authzserver"
	"isobar.dev/e2e/harness"
)

// Envoy asks each route's authorization server over a real connection
// before it forwards: an HTTP server sees the check under its prefix,
// with the request's authorization and not its other headers, and
// allows with 200 (its allowed headers go on with the request) or denies
// with its own answer; a gRPC server answers a CheckRequest, which
// carries the route's context and the body (whole, or refused with 413
// when longer than the check may carry; as bytes or a string); a server
// that cannot be reached denies with 403, unless the filter fails open.
func TestExternalAuthorization(t *testing.T) {
	be := backend(t, func(p *http.Protocols) { p.SetHTTP1(true) }, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Seen-Context", r.Header.Get("X-Auth-Context"))
		w.Header().Set("Seen-Body", r.Header.Get("X-Auth-Body"))
		fmt.Fprintf(w, "backend: %s", r.Header.Get("X-Auth-User"))
	})
	httpAuth := backend(t, func(p *http.Protocols) { p.SetHTTP1(true) }, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/check/headers" && r.Header.Get("Cookie") == "" {
			// Through the filter that allows X-User: the check carries it.
			if r.Header.Get("X-User") != "alice" {
				w.WriteHeader(http.StatusUnauthorized)
				fmt.Fprint(w, "log in first")
				return
			}
			w.Header().Set("X-Auth-User", "alice (headers)")
			return
		}
		if r.URL.Path != "/check/http" || r.Header.Get("Cookie") != "" {
			http.Error(w, "unexpected check "+r.URL.Path, http.StatusBadRequest)
			return
		}
		if r.Header.Get("Authorization") != "Bearer alice" || r.Header.Get("X-User") != "" {
			w.Header().Set("WWW-Authenticate", "Basic")
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprint(w, "log in first")
			return
		}
		w.Header().Set("X-Auth-User", "alice (http)")
	})
	gl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer()
	authv3.RegisterAuthorizationServer(gs, authzserver.Server{})
	go func() { _ = gs.Serve(gl) }()
	t.Cleanup(gs.Stop)
	down := harness.FreePort(t)

	const failOpen = "envoy.filters.http.ext_authz/fail-open"
	const withUser = "envoy.filters.http.ext_authz/headers=x-user"
	perFilter := func(filter string, cs *extauthzv3.CheckSettings) map[string]*anypb.Any {
		return map[string]*anypb.Any{filter: typed(t, &routev3.FilterConfig{
			Config: typed(t, &extauthzv3.ExtAuthzPerRoute{Override: &extauthzv3.ExtAuthzPerRoute_CheckSettings{CheckSettings: cs}})})}
	}
	perRoute := func(cs *extauthzv3.CheckSettings) map[string]*anypb.Any {
		return perFilter("envoy.filters.http.ext_authz", cs)
	}
	grpcService := func(cluster string) *extauthzv3.CheckSettings_GrpcService {
		return &extauthzv3.CheckSettings_GrpcService{GrpcService: &corev3.GrpcService{
			TargetSpecifier: &corev3.GrpcService_EnvoyGrpc_{EnvoyGrpc: &corev3.GrpcService_EnvoyGrpc{ClusterName: cluster}},
			Timeout:         durationpb.New(2 * time.Second),
		}}
	}
	httpService := func(cluster string) *extauthzv3.CheckSettings {
		return &extauthzv3.CheckSettings{ServiceOverride: &extauthzv3.CheckSettings_HttpService{HttpService: &extauthzv3.HttpService{
			ServerUri:  &corev3.HttpUri{Uri: "http://auth", HttpUpstreamType: &corev3.HttpUri_Cluster{Cluster: cluster}, Timeout: durationpb.New(2 * time.Second)},
			PathPrefix: "/check",
			AuthorizationResponse: &extauthzv3.AuthorizationResponse{AllowedUpstreamHeaders: &matcherv3.ListStringMatcher{Patterns: []*matcherv3.StringMatcher{{
				MatchPattern: &matcherv3.StringMatcher_Exact{Exact: "x-auth-user"}}}}},
		}}}
	}
	route := func(prefix string, cfg map[string]*anypb.Any) *routev3.Route {
		return &routev3.Route{Name: prefix, Match: &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: prefix}},
			Action:               &routev3.Route_Route{Route: &routev3.RouteAction{ClusterSpecifier: &routev3.RouteAction_Cluster{Cluster: "backend"}}},
			TypedPerFilterConfig: cfg}
	}
	hcm := &hcmv3.HttpConnectionManager{
		StatPrefix: "test",
		RouteSpecifier: &hcmv3.HttpConnectionManager_RouteConfig{RouteConfig: &routev3.RouteConfiguration{
			Name: "test",
			VirtualHosts: []*routev3.VirtualHost{{Name: "all", Domains: []string{"*"}, Routes: []*routev3.Route{
				route("/http", perRoute(httpService("auth-http"))),
				route("/down", perRoute(httpService("auth-down"))),
				route("/grpc", perRoute(&extauthzv3.CheckSettings{ServiceOverride: grpcService("auth-grpc")})),
				route("/context", perRoute(&extauthzv3.CheckSettings{ServiceOverride: grpcService("auth-grpc"),
					ContextExtensions: map[string]string{"tier": "admin", "team": "shop"}})),
				route("/whole", perRoute(&extauthzv3.CheckSettings{ServiceOverride: grpcService("auth-grpc"),
					WithRequestBody: &extauthzv3.BufferSettings{MaxRequestBytes: 8, PackAsBytes: true}})),
				route("/partial", perRoute(&extauthzv3.CheckSettings{ServiceOverride: grpcService("auth-grpc"),
					WithRequestBody: &extauthzv3.BufferSettings{MaxRequestBytes: 8, AllowPartialMessage: true}})),
				route("/open", perFilter(failOpen, httpService("auth-down"))),
				route("/headers", perFilter(withUser, httpService("auth-http"))),
				route("/", nil),
			}}},
		}},
		HttpFilters: []*hcmv3.HttpFilter{{
			Name: "envoy.filters.http.ext_authz", Disabled: true,
			ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: typed(t, &extauthzv3.ExtAuthz{TransportApiVersion: corev3.ApiVersion_V3,
				Services: &extauthzv3.ExtAuthz_HttpService{HttpService: &extauthzv3.HttpService{ServerUri: &corev3.HttpUri{
					Uri: "http://unused", HttpUpstreamType: &corev3.HttpUri_Cluster{Cluster: "unused"}, Timeout: durationpb.New(time.Second)}}}})},
		}, {
			Name: failOpen, Disabled: true,
			ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: typed(t, &extauthzv3.ExtAuthz{TransportApiVersion: corev3.ApiVersion_V3, FailureModeAllow: true,
				Services: &extauthzv3.ExtAuthz_HttpService{HttpService: &extauthzv3.HttpService{ServerUri: &corev3.HttpUri{
					Uri: "http://unused", HttpUpstreamType: &corev3.HttpUri_Cluster{Cluster: "unused"}, Timeout: durationpb.New(time.Second)}}}})},
		}, {
			Name: withUser, Disabled: true,
			ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: typed(t, &extauthzv3.ExtAuthz{TransportApiVersion: corev3.ApiVersion_V3,
				AllowedHeaders: &matcherv3.ListStringMatcher{Patterns: []*matcherv3.StringMatcher{{MatchPattern: &matcherv3.StringMatcher_Exact{Exact: "x-user"}}}},
				Services: &extauthzv3.ExtAuthz_HttpService{HttpService: &extauthzv3.HttpService{ServerUri: &corev3.HttpUri{
					Uri: "http://unused", HttpUpstreamType: &corev3.HttpUri_Cluster{Cluster: "unused"}, Timeout: durationpb.New(time.Second)}}}})},
		}, {Name: "envoy.filters.http.router", ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: typed(t, &routerv3.Router{})}}},
	}
	port := harness.FreePort(t)
	l := hcmListener(t, "test", port, hcm)
	named := func(name string, addr *net.TCPAddr, http2 bool) *clusterv3.Cluster {
		c := backendCluster(t, addr, http2)
		c.Name, c.LoadAssignment.ClusterName = name, name
		return c
	}
	staticEnvoy(t, l, backendCluster(t, be, false), named("auth-http", httpAuth, false),
		named("auth-grpc", gl.Addr().(*net.TCPAddr), true), named("auth-down", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: down}, false))
	get(t, port, "/") // the listener is bound and the backend answers

	for _, tc := range []struct {
		path, user string
		status     int
		body       string
		// sent is the request's body; context and seen what the server
		// said it got of the check's context and body.
		sent, context, seen string
	}{
		{path: "/http", user: "alice", status: 200, body: "backend: alice (http)"},
		{path: "/http", user: "bob", status: 401, body: "log in first"},
		{path: "/grpc", user: "alice", status: 200, body: "backend: alice (grpc)"},
		{path: "/grpc", user: "bob", status: 401, body: "who are you?"},
		{path: "/down", user: "alice", status: 403},
		{path: "/", user: "bob", status: 200, body: "backend: "},
		{path: "/context", user: "alice", status: 200, body: "backend: alice (grpc)", context: "team=shop,tier=admin"},
		{path: "/whole", user: "alice", status: 200, body: "backend: alice (grpc)", sent: "1234", seen: "1234 (bytes)"},
		{path: "/whole", user: "alice", status: 413, body: "Payload Too Large", sent: "123456789"},
		{path: "/partial", user: "alice", status: 200, body: "backend: alice (grpc)", sent: "123456789", seen: "12345678 (string)"},
		{path: "/open", user: "bob", status: 200, body: "backend: "},
		{path: "/headers", user: "alice", status: 200, body: "backend: alice (headers)"},
		{path: "/headers", user: "bob", status: 401, body: "log in first"},
	} {
		method, sent := http.MethodGet, io.Reader(nil)
		if tc.sent != "" {
			method, sent = http.MethodPost, strings.NewReader(tc.sent)
		}
		req, err := http.NewRequest(method, "http://127.0.0.1:"+strconv.Itoa(port)+tc.path, sent)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+tc.user)
		req.Header.Set("X-User", tc.user)
		req.Header.Set("Cookie", "session=1")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.status || string(body) != tc.body {
			t.Errorf("%s as %s: %d %q, want %d %q", tc.path, tc.user, resp.StatusCode, body, tc.status, tc.body)
		}
		if got := resp.Header.Get("Seen-Context"); got != tc.context {
			t.Errorf("%s as %s: the server got context %q, want %q", tc.path, tc.user, got, tc.context)
		}
		if got := resp.Header.Get("Seen-Body"); got != tc.seen {
			t.Errorf("%s as %s: the server got body %q, want %q", tc.path, tc.user, got, tc.seen)
		}
		if tc.status == 401 && tc.path == "/http" && resp.Header.Get("Www-Authenticate") != "Basic" {
			t.Errorf("%s as %s: the server's WWW-Authenticate did not reach the client: %v", tc.path, tc.user, resp.Header)
		}
	}
}
