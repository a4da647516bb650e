package dataplane

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"testing"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	extauthzv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_authz/v3"
	routerv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	authv3 "github.com/envoyproxy/go-control-plane/envoy/service/auth/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"google.golang.org/genproto/googleapis/rpc/code"
	rpcstatus "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"
)

// grpcAuth allows the requests of alice, adding who she is, and denies
// the others with 401 and a body.
type grpcAuth struct {
	authv3.UnimplementedAuthorizationServer
}

func (grpcAuth) Check(_ context.Context, req *authv3.CheckRequest) (*authv3.CheckResponse, error) {
	if req.GetAttributes().GetRequest().GetHttp().GetHeaders()["authorization"] == "Bearer alice" {
		return &authv3.CheckResponse{Status: &rpcstatus.Status{Code: int32(code.Code_OK)}, HttpResponse: &authv3.CheckResponse_OkResponse{OkResponse: &authv3.OkHttpResponse{
			Headers: []*corev3.HeaderValueOption{{Header: &corev3.HeaderValue{Key: "x-auth-user", Value: "alice (grpc)"}}},
		}}}, nil
	}
	return &authv3.CheckResponse{Status: &rpcstatus.Status{Code: int32(code.Code_PERMISSION_DENIED)}, HttpResponse: &authv3.CheckResponse_DeniedResponse{DeniedResponse: &authv3.DeniedHttpResponse{
		Status: &typev3.HttpStatus{Code: typev3.StatusCode_Unauthorized}, Body: "who are you?",
	}}}, nil
}

// Envoy asks each route's authorization server over a real connection
// before it forwards: an HTTP server sees the check under its prefix,
// with the request's authorization and not its other headers, and
// allows with 200 (its allowed headers go on with the request) or denies
// with its own answer; a gRPC server answers a CheckRequest; a server that
// cannot be reached denies with 403.
func TestExternalAuthorization(t *testing.T) {
	be := backend(t, func(p *http.Protocols) { p.SetHTTP1(true) }, func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "backend: %s", r.Header.Get("X-Auth-User"))
	})
	httpAuth := backend(t, func(p *http.Protocols) { p.SetHTTP1(true) }, func(w http.ResponseWriter, r *http.Request) {
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
	authv3.RegisterAuthorizationServer(gs, grpcAuth{})
	go func() { _ = gs.Serve(gl) }()
	t.Cleanup(gs.Stop)
	down := freePort(t)

	perRoute := func(cs *extauthzv3.CheckSettings) map[string]*anypb.Any {
		return map[string]*anypb.Any{"envoy.filters.http.ext_authz": typed(t, &routev3.FilterConfig{
			Config: typed(t, &extauthzv3.ExtAuthzPerRoute{Override: &extauthzv3.ExtAuthzPerRoute_CheckSettings{CheckSettings: cs}})})}
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
				route("/grpc", perRoute(&extauthzv3.CheckSettings{ServiceOverride: &extauthzv3.CheckSettings_GrpcService{GrpcService: &corev3.GrpcService{
					TargetSpecifier: &corev3.GrpcService_EnvoyGrpc_{EnvoyGrpc: &corev3.GrpcService_EnvoyGrpc{ClusterName: "auth-grpc"}},
					Timeout:         durationpb.New(2 * time.Second),
				}}})),
				route("/", nil),
			}}},
		}},
		HttpFilters: []*hcmv3.HttpFilter{{
			Name: "envoy.filters.http.ext_authz", Disabled: true,
			ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: typed(t, &extauthzv3.ExtAuthz{TransportApiVersion: corev3.ApiVersion_V3,
				Services: &extauthzv3.ExtAuthz_HttpService{HttpService: &extauthzv3.HttpService{ServerUri: &corev3.HttpUri{
					Uri: "http://unused", HttpUpstreamType: &corev3.HttpUri_Cluster{Cluster: "unused"}, Timeout: durationpb.New(time.Second)}}}})},
		}, {Name: "envoy.filters.http.router", ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: typed(t, &routerv3.Router{})}}},
	}
	port := freePort(t)
	l := &listenerv3.Listener{
		Name:    "test",
		Address: &corev3.Address{Address: &corev3.Address_SocketAddress{SocketAddress: &corev3.SocketAddress{Address: "0.0.0.0", PortSpecifier: &corev3.SocketAddress_PortValue{PortValue: uint32(port)}}}},
		FilterChains: []*listenerv3.FilterChain{{Filters: []*listenerv3.Filter{{
			Name: "envoy.filters.network.http_connection_manager", ConfigType: &listenerv3.Filter_TypedConfig{TypedConfig: typed(t, hcm)},
		}}}},
	}
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
	}{
		{"/http", "alice", 200, "backend: alice (http)"},
		{"/http", "bob", 401, "log in first"},
		{"/grpc", "alice", 200, "backend: alice (grpc)"},
		{"/grpc", "bob", 401, "who are you?"},
		{"/down", "alice", 403, ""},
		{"/", "bob", 200, "backend: "},
	} {
		req, err := http.NewRequest(http.MethodGet, "http://127.0.0.1:"+strconv.Itoa(port)+tc.path, nil)
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
		if tc.status == 401 && tc.path == "/http" && resp.Header.Get("Www-Authenticate") != "Basic" {
			t.Errorf("%s as %s: the server's WWW-Authenticate did not reach the client: %v", tc.path, tc.user, resp.Header)
		}
	}
}
