package dataplane

import (
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	tracev3 "github.com/envoyproxy/go-control-plane/envoy/config/trace/v3"
	routerv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	tracingv3 "github.com/envoyproxy/go-control-plane/envoy/type/tracing/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	collectortracev1 "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"isobar.dev/e2e/harness"
	"isobar.dev/e2e/otlpreceiver"
)

// Envoy's OpenTelemetry tracer exports a span of each sampled request to
// the collector over a real OTLP/gRPC connection: service.name, the
// request's URL (cut at max_path_tag_length), method and status, the
// custom tags (a literal, a request header, an environment variable),
// the client's trace continued (its traceparent's trace, with its span as
// the parent) and passed on to the backend; an answer of 5xx is an error.
// A connection manager that samples none exports nothing.
func TestTracing(t *testing.T) {
	receiver := &otlpreceiver.Receiver{}
	gl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer()
	collectortracev1.RegisterTraceServiceServer(gs, receiver)
	go func() { _ = gs.Serve(gl) }()
	t.Cleanup(gs.Stop)
	be := backend(t, func(p *http.Protocols) { p.SetHTTP1(true) }, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Seen-Traceparent", r.Header.Get("Traceparent"))
		if r.URL.Path == "/fail" {
			w.WriteHeader(http.StatusBadGateway)
		}
	})
	t.Setenv("ISOBAR_TEST_POD", "envoy-abc")

	hcm := func(sampling, client, random float64) *hcmv3.HttpConnectionManager {
		return &hcmv3.HttpConnectionManager{
			StatPrefix: "test",
			RouteSpecifier: &hcmv3.HttpConnectionManager_RouteConfig{RouteConfig: &routev3.RouteConfiguration{
				Name: "test",
				VirtualHosts: []*routev3.VirtualHost{{Name: "all", Domains: []string{"*"}, Routes: []*routev3.Route{{
					Match:  &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: "/"}},
					Action: &routev3.Route_Route{Route: &routev3.RouteAction{ClusterSpecifier: &routev3.RouteAction_Cluster{Cluster: "backend"}}},
				}}}},
			}},
			HttpFilters: []*hcmv3.HttpFilter{{Name: "envoy.filters.http.router", ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: typed(t, &routerv3.Router{})}}},
			Tracing: &hcmv3.HttpConnectionManager_Tracing{
				OverallSampling:  &typev3.Percent{Value: sampling},
				ClientSampling:   &typev3.Percent{Value: client},
				RandomSampling:   &typev3.Percent{Value: random},
				MaxPathTagLength: wrapperspb.UInt32(32),
				CustomTags: []*tracingv3.CustomTag{
					{Tag: "environment", Type: &tracingv3.CustomTag_Literal_{Literal: &tracingv3.CustomTag_Literal{Value: "production"}}},
					{Tag: "team", Type: &tracingv3.CustomTag_RequestHeader{RequestHeader: &tracingv3.CustomTag_Header{Name: "x-team"}}},
					{Tag: "podName", Type: &tracingv3.CustomTag_Environment_{Environment: &tracingv3.CustomTag_Environment{Name: "ISOBAR_TEST_POD"}}},
				},
				Provider: &tracev3.Tracing_Http{Name: "envoy.tracers.opentelemetry", ConfigType: &tracev3.Tracing_Http_TypedConfig{TypedConfig: typed(t, &tracev3.OpenTelemetryConfig{
					GrpcService: &corev3.GrpcService{TargetSpecifier: &corev3.GrpcService_EnvoyGrpc_{EnvoyGrpc: &corev3.GrpcService_EnvoyGrpc{ClusterName: "otel"}}},
					ServiceName: "shop",
				})}},
			},
		}
	}
	traced, quiet, clientOnly := harness.FreePort(t), harness.FreePort(t), harness.FreePort(t)
	collector := backendCluster(t, gl.Addr().(*net.TCPAddr), true)
	collector.Name, collector.LoadAssignment.ClusterName = "otel", "otel"
	staticEnvoy(t, hcmListener(t, "traced", traced, hcm(100, 100, 100)), hcmListener(t, "quiet", quiet, hcm(0, 100, 100)),
		hcmListener(t, "client-only", clientOnly, hcm(100, 100, 0)), backendCluster(t, be, false), collector)
	get(t, traced, "/")
	get(t, quiet, "/")
	// The spans of the requests that waited for the listeners.
	waitSpans := func(n int) []otlpreceiver.Span {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for len(receiver.Spans()) < n && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		return receiver.Spans()
	}
	before := len(waitSpans(1))

	const traceID, parentID = "0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331"
	req, err := http.NewRequest(http.MethodPost, "http://127.0.0.1:"+strconv.Itoa(traced)+"/orders/12345?expand=items", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-Team", "checkout")
	req.Header.Set("Traceparent", "00-"+traceID+"-"+parentID+"-01")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got := resp.Header.Get("Seen-Traceparent"); !strings.HasPrefix(got, "00-"+traceID+"-") || strings.Contains(got, parentID) {
		t.Errorf("the backend got traceparent %q, want the client's trace %s with Envoy's span as the parent", got, traceID)
	}
	spans := waitSpans(before + 1)
	if len(spans) != before+1 {
		t.Fatalf("the collector has %d spans, want %d", len(spans), before+1)
	}
	s := spans[before]
	want := map[string]string{
		"http.url":    "http://127.0.0.1:" + strconv.Itoa(traced) + "/orders/12345"[:32-len("http://127.0.0.1:"+strconv.Itoa(traced))],
		"http.method": "POST", "http.status_code": "200", "upstream_cluster": "backend", "component": "proxy",
		"environment": "production", "team": "checkout", "podName": "envoy-abc",
	}
	for k, v := range want {
		if s.Attributes[k] != v {
			t.Errorf("span attribute %s = %q, want %q (span %+v)", k, s.Attributes[k], v, s)
		}
	}
	if s.Service != "shop" || s.Name != "ingress" || s.Kind != "SPAN_KIND_SERVER" || s.TraceID != traceID || s.ParentID != parentID || s.Error {
		t.Errorf("span %+v, want service shop, ingress, server, trace %s under %s, no error", s, traceID, parentID)
	}

	// A 5xx answer is an error span.
	fail, _ := get(t, traced, "/fail")
	if fail.StatusCode != http.StatusBadGateway {
		t.Fatalf("/fail: %d", fail.StatusCode)
	}
	spans = waitSpans(before + 2)
	if len(spans) < before+2 || !spans[before+1].Error || spans[before+1].Attributes["http.status_code"] != "502" {
		t.Errorf("spans %+v, want an error span of status 502 last", spans[before:])
	}

	// Sampling none: nothing is exported, and requests are served.
	n := len(receiver.Spans())
	for range 5 {
		if r, _ := get(t, quiet, "/"); r.StatusCode != http.StatusOK {
			t.Fatalf("untraced request: %d", r.StatusCode)
		}
	}
	time.Sleep(200 * time.Millisecond)
	if got := len(receiver.Spans()); got != n {
		t.Errorf("a connection manager sampling 0%% exported %d spans", got-n)
	}

	// Random sampling none, client sampling all: only the requests with
	// an x-client-trace-id are traced.
	for range 5 {
		if r, _ := get(t, clientOnly, "/"); r.StatusCode != http.StatusOK {
			t.Fatalf("untraced request: %d", r.StatusCode)
		}
	}
	time.Sleep(200 * time.Millisecond)
	if got := len(receiver.Spans()); got != n {
		t.Errorf("random sampling 0%%: %d spans of requests without x-client-trace-id", got-n)
	}
	req, err = http.NewRequest(http.MethodGet, "http://127.0.0.1:"+strconv.Itoa(clientOnly)+"/client", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-Client-Trace-Id", "debug-1")
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if spans := waitSpans(n + 1); len(spans) != n+1 {
		t.Errorf("client sampling 100%%: %d spans of a request with x-client-trace-id, want 1", len(spans)-n)
	}
}
