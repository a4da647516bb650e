package dataplane

import (
	"io"
	"net"
	"net/http"
	"strconv"
	"testing"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	ratelimitconfigv3 "github.com/envoyproxy/go-control-plane/envoy/config/ratelimit/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	ratelimitv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ratelimit/v3"
	routerv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/durationpb"

	"isobar.dev/e2e/harness"
	"isobar.dev/e2e/ratelimitserver"
)

// Envoy's rate limit filter asks a real rate limit service, over gRPC,
// about each request a route describes: the third request a minute of a
// descriptor limited to two is answered 429 with x-envoy-ratelimited and
// the x-ratelimit-* headers the service's statuses give; allowed answers
// carry them too; another descriptor has its own count; a request the
// route does not describe (no header) is not asked about. A service that
// cannot be reached makes Envoy answer 500, or let the request through
// when the filter fails open.
func TestGlobalRateLimits(t *testing.T) {
	be := backend(t, func(p *http.Protocols) { p.SetHTTP1(true) }, func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "backend") })
	gl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer()
	rlsv3.RegisterRateLimitServiceServer(gs, &ratelimitserver.Server{Limit: 2})
	go func() { _ = gs.Serve(gl) }()
	t.Cleanup(gs.Stop)
	down := harness.FreePort(t)

	listener := func(name string, port int, service string, failOpen bool) *listenerv3.Listener {
		byUser := &routev3.RateLimit{Actions: []*routev3.RateLimit_Action{{ActionSpecifier: &routev3.RateLimit_Action_RequestHeaders_{
			RequestHeaders: &routev3.RateLimit_Action_RequestHeaders{HeaderName: "x-user", DescriptorKey: "user"}}}}}
		hcm := &hcmv3.HttpConnectionManager{
			StatPrefix: name,
			RouteSpecifier: &hcmv3.HttpConnectionManager_RouteConfig{RouteConfig: &routev3.RouteConfiguration{
				Name: name,
				VirtualHosts: []*routev3.VirtualHost{{Name: "all", Domains: []string{"*"}, Routes: []*routev3.Route{{
					Match: &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: "/"}},
					Action: &routev3.Route_Route{Route: &routev3.RouteAction{
						ClusterSpecifier: &routev3.RouteAction_Cluster{Cluster: "backend"}, RateLimits: []*routev3.RateLimit{byUser},
					}},
				}}}},
			}},
			HttpFilters: []*hcmv3.HttpFilter{{
				Name: "envoy.filters.http.ratelimit",
				ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: typed(t, &ratelimitv3.RateLimit{
					Domain: "test", FailureModeDeny: !failOpen, Timeout: durationpb.New(2 * time.Second),
					EnableXRatelimitHeaders: ratelimitv3.RateLimit_DRAFT_VERSION_03,
					RateLimitService: &ratelimitconfigv3.RateLimitServiceConfig{TransportApiVersion: corev3.ApiVersion_V3,
						GrpcService: &corev3.GrpcService{TargetSpecifier: &corev3.GrpcService_EnvoyGrpc_{EnvoyGrpc: &corev3.GrpcService_EnvoyGrpc{ClusterName: service}}}},
				})},
			}, {Name: "envoy.filters.http.router", ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: typed(t, &routerv3.Router{})}}},
		}
		return hcmListener(t, name, port, hcm)
	}
	limited, closed, open := harness.FreePort(t), harness.FreePort(t), harness.FreePort(t)
	named := func(name string, addr *net.TCPAddr) *clusterv3.Cluster {
		c := backendCluster(t, addr, true)
		c.Name, c.LoadAssignment.ClusterName = name, name
		return c
	}
	staticEnvoy(t, listener("limited", limited, "ratelimit", false), listener("closed", closed, "down", false), listener("open", open, "down", true),
		backendCluster(t, be, false), named("ratelimit", gl.Addr().(*net.TCPAddr)), named("down", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: down}))
	get(t, limited, "/") // the listener is bound; without x-user nothing is asked

	send := func(port int, user string) *http.Response {
		req, err := http.NewRequest(http.MethodGet, "http://127.0.0.1:"+strconv.Itoa(port)+"/", nil)
		if err != nil {
			t.Fatal(err)
		}
		if user != "" {
			req.Header.Set("X-User", user)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	for i, tc := range []struct {
		port              int
		user              string
		status            int
		limit, remaining  string
		limitedByEnvoyRLS bool
	}{
		{port: limited, user: "alice", status: 200, limit: "2, 2;w=60", remaining: "1"},
		{port: limited, user: "alice", status: 200, limit: "2, 2;w=60", remaining: "0"},
		{port: limited, user: "alice", status: 429, limit: "2, 2;w=60", remaining: "0", limitedByEnvoyRLS: true},
		{port: limited, user: "bob", status: 200, limit: "2, 2;w=60", remaining: "1"},
		{port: limited, status: 200},
		{port: closed, user: "alice", status: 500},
		{port: open, user: "alice", status: 200},
	} {
		resp := send(tc.port, tc.user)
		h := resp.Header
		if resp.StatusCode != tc.status || h.Get("X-Ratelimit-Limit") != tc.limit || h.Get("X-Ratelimit-Remaining") != tc.remaining ||
			(h.Get("X-Envoy-Ratelimited") == "true") != tc.limitedByEnvoyRLS {
			t.Errorf("request %d (user %q): %d %v, want %d with x-ratelimit-limit %q, remaining %q, x-envoy-ratelimited %v",
				i, tc.user, resp.StatusCode, h, tc.status, tc.limit, tc.remaining, tc.limitedByEnvoyRLS)
		}
		if tc.limit != "" && h.Get("X-Ratelimit-Reset") == "" {
			t.Errorf("request %d (user %q): no x-ratelimit-reset: %v", i, tc.user, h)
		}
	}
}
