package dataplane

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"testing"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	routerv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	httpv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/upstreams/http/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"

	"isobar.dev/e2e/harness"
)

// staticEnvoy is a simulated Envoy holding a fixed configuration, with no
// xDS server: what it does with traffic is all there is to see.
func staticEnvoy(t *testing.T, resources ...proto.Message) *Envoy {
	t.Helper()
	e := newEnvoy(&Bootstrap{Node: &corev3.Node{Id: "test"}})
	for _, r := range resources {
		var typ, name string
		switch r := r.(type) {
		case *listenerv3.Listener:
			typ, name = resourcev3.ListenerType, r.GetName()
		case *clusterv3.Cluster:
			typ, name = resourcev3.ClusterType, r.GetName()
		case *tlsv3.Secret:
			typ, name = resourcev3.SecretType, r.GetName()
		default:
			t.Fatalf("unexpected resource %T", r)
		}
		e.resources[typ][name] = r
	}
	var d net.Dialer
	e.Serve("127.0.0.1", d.DialContext)
	t.Cleanup(func() { e.stopServing() })
	return e
}

func typed(t *testing.T, m proto.Message) *anypb.Any {
	t.Helper()
	a, err := anypb.New(m)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// httpListener is a listener on port whose one route sends everything to
// cluster "backend" with the route timeout.
func httpListenerOn(t *testing.T, port int, timeout time.Duration) *listenerv3.Listener {
	hcm := &hcmv3.HttpConnectionManager{
		StatPrefix: "test",
		RouteSpecifier: &hcmv3.HttpConnectionManager_RouteConfig{RouteConfig: &routev3.RouteConfiguration{
			Name: "test",
			VirtualHosts: []*routev3.VirtualHost{{Name: "all", Domains: []string{"*"}, Routes: []*routev3.Route{{
				Match: &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: "/"}},
				Action: &routev3.Route_Route{Route: &routev3.RouteAction{
					ClusterSpecifier: &routev3.RouteAction_Cluster{Cluster: "backend"},
					Timeout:          durationpb.New(timeout),
				}},
			}}}},
		}},
		HttpFilters: []*hcmv3.HttpFilter{{Name: "envoy.filters.http.router", ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: typed(t, &routerv3.Router{})}}},
	}
	return hcmListener(t, "test", port, hcm)
}

// hcmListener is a listener on port whose connections hcm manages.
func hcmListener(t *testing.T, name string, port int, hcm *hcmv3.HttpConnectionManager) *listenerv3.Listener {
	return &listenerv3.Listener{
		Name:    name,
		Address: &corev3.Address{Address: &corev3.Address_SocketAddress{SocketAddress: &corev3.SocketAddress{Address: "0.0.0.0", PortSpecifier: &corev3.SocketAddress_PortValue{PortValue: uint32(port)}}}},
		FilterChains: []*listenerv3.FilterChain{{Filters: []*listenerv3.Filter{{
			Name: "envoy.filters.network.http_connection_manager", ConfigType: &listenerv3.Filter_TypedConfig{TypedConfig: typed(t, hcm)},
		}}}},
	}
}

// backendCluster is a static cluster of one endpoint; http2 makes it
// speak HTTP/2 to it, as a cluster with Http2ProtocolOptions does.
func backendCluster(t *testing.T, endpoint *net.TCPAddr, http2 bool) *clusterv3.Cluster {
	c := &clusterv3.Cluster{
		Name:                 "backend",
		ClusterDiscoveryType: &clusterv3.Cluster_Type{Type: clusterv3.Cluster_STATIC},
		LoadAssignment: &endpointv3.ClusterLoadAssignment{ClusterName: "backend", Endpoints: []*endpointv3.LocalityLbEndpoints{{
			LbEndpoints: []*endpointv3.LbEndpoint{{HostIdentifier: &endpointv3.LbEndpoint_Endpoint{Endpoint: &endpointv3.Endpoint{
				Address: &corev3.Address{Address: &corev3.Address_SocketAddress{SocketAddress: &corev3.SocketAddress{
					Address: endpoint.IP.String(), PortSpecifier: &corev3.SocketAddress_PortValue{PortValue: uint32(endpoint.Port)}}}},
			}}}},
		}}},
	}
	if http2 {
		c.TypedExtensionProtocolOptions = map[string]*anypb.Any{"envoy.extensions.upstreams.http.v3.HttpProtocolOptions": typed(t, &httpv3.HttpProtocolOptions{
			UpstreamProtocolOptions: &httpv3.HttpProtocolOptions_ExplicitHttpConfig_{ExplicitHttpConfig: &httpv3.HttpProtocolOptions_ExplicitHttpConfig{
				ProtocolConfig: &httpv3.HttpProtocolOptions_ExplicitHttpConfig_Http2ProtocolOptions{Http2ProtocolOptions: &corev3.Http2ProtocolOptions{}},
			}},
		})}
	}
	return c
}

// backend serves handler on a port of its own, speaking only the
// protocols given.
func backend(t *testing.T, protocols func(*http.Protocols), handler http.HandlerFunc) *net.TCPAddr {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var p http.Protocols
	protocols(&p)
	s := &http.Server{Handler: handler, Protocols: &p}
	go func() { _ = s.Serve(l) }()
	t.Cleanup(func() { s.Close() })
	return l.Addr().(*net.TCPAddr)
}

// get sends a request to the Envoy's port once it listens.
func get(t *testing.T, port int, path string) (*http.Response, time.Duration) {
	t.Helper()
	url := "http://127.0.0.1:" + strconv.Itoa(port) + path
	deadline := time.Now().Add(5 * time.Second)
	for {
		start := time.Now()
		resp, err := http.Get(url)
		if err == nil {
			_, _ = io.ReadAll(resp.Body)
			resp.Body.Close()
			return resp, time.Since(start)
		}
		var op *net.OpError
		if !errors.As(err, &op) || time.Now().After(deadline) {
			t.Fatal(err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A route timeout is waited for: a backend that answers after 3 s gets
// Envoy's 504 once the route's 1 s have passed, not before and not at 3 s.
func TestRouteTimeoutIsWallClock(t *testing.T) {
	slow := backend(t, func(p *http.Protocols) { p.SetHTTP1(true) }, func(w http.ResponseWriter, r *http.Request) {
		d, _ := time.ParseDuration(r.URL.Query().Get("delay"))
		select {
		case <-time.After(d):
		case <-r.Context().Done():
		}
		fmt.Fprint(w, "late")
	})
	port := harness.FreePort(t)
	staticEnvoy(t, httpListenerOn(t, port, time.Second), backendCluster(t, slow, false))
	get(t, port, "/") // the listener is bound and the backend answers
	resp, took := get(t, port, "/?delay=3s")
	if resp.StatusCode != http.StatusGatewayTimeout {
		t.Fatalf("status %d, want 504", resp.StatusCode)
	}
	if took < time.Second || took > 2500*time.Millisecond {
		t.Errorf("the 504 came after %s; the route timeout is 1s and the backend answers after 3s", took)
	}
}

// The cluster's protocol is the one spoken upstream: a backend that only
// speaks HTTP/2 in plain text (h2c, as gRPC servers do) answers a cluster
// with HTTP/2 options, and fails a cluster without them.
func TestClusterProtocolReachesBackend(t *testing.T) {
	h2c := backend(t, func(p *http.Protocols) { p.SetUnencryptedHTTP2(true) }, func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, r.Proto)
	})
	for _, tc := range []struct {
		http2 bool
		want  int
	}{{true, http.StatusOK}, {false, http.StatusServiceUnavailable}} {
		t.Run(fmt.Sprintf("http2=%t", tc.http2), func(t *testing.T) {
			port := harness.FreePort(t)
			staticEnvoy(t, httpListenerOn(t, port, time.Second), backendCluster(t, h2c, tc.http2))
			if resp, _ := get(t, port, "/"); resp.StatusCode != tc.want {
				t.Errorf("status %d, want %d", resp.StatusCode, tc.want)
			}
		})
	}
}
