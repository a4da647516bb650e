package dataplane

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	collectortracev1 "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonv1 "go.opentelemetry.io/proto/otlp/common/v1"
	resourcev1 "go.opentelemetry.io/proto/otlp/resource/v1"
	tracev1 "go.opentelemetry.io/proto/otlp/trace/v1"

	"isobar.dev/controller/pkg/envoysim"
)

// span is the span Envoy's tracer makes of one sampled request: its
// trace (the client's, from its traceparent, or a new one), its own id,
// and the client's span as its parent.
type span struct {
	trace        *envoysim.Trace
	traceID      []byte
	spanID       []byte
	parentSpanID []byte
	requestID    string
	start        time.Time
}

// startSpan decides whether Envoy traces a request (by its x-request-id,
// a new one when it has none) and, when it does, starts its span and
// propagates it to the backends (W3C traceparent), as Envoy's
// OpenTelemetry tracer does.
func startSpan(r *http.Request, a *envoysim.Answer) *span {
	t := a.Trace
	if t == nil {
		return nil
	}
	id := r.Header.Get("X-Request-Id")
	if id == "" {
		id = hex.EncodeToString(randomBytes(16))
	}
	if !t.Sampled(id, r.Header.Get("X-Client-Trace-Id") != "") {
		return nil
	}
	s := &span{trace: t, traceID: randomBytes(16), spanID: randomBytes(8), requestID: id, start: time.Now()}
	if parts := strings.Split(r.Header.Get("Traceparent"), "-"); len(parts) == 4 && parts[0] == "00" {
		tid, err1 := hex.DecodeString(parts[1])
		pid, err2 := hex.DecodeString(parts[2])
		if err1 == nil && err2 == nil && len(tid) == 16 && len(pid) == 8 {
			s.traceID, s.parentSpanID = tid, pid
		}
	}
	parent := []envoysim.Header{{Name: "traceparent", Value: "00-" + hex.EncodeToString(s.traceID) + "-" + hex.EncodeToString(s.spanID) + "-01"}}
	for i := range a.Backends {
		withHeaders(a.Backends[i].Request, parent)
	}
	return s
}

func randomBytes(n int) []byte {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return b
}

// finish ends a span with the answer's status and exports it to the
// collector over OTLP/gRPC, within the export's timeout; a collector that
// cannot be reached loses the span, as Envoy's does.
func (p *proxy) finish(s *span, sim *envoysim.Simulator, r *http.Request, status int, upstream string) {
	if s == nil {
		return
	}
	attrs := []*commonv1.KeyValue{
		str("component", "proxy"), str("guid:x-request-id", s.requestID), str("http.url", s.trace.URL),
		str("http.method", r.Method), str("http.protocol", r.Proto), str("http.status_code", strconv.Itoa(status)),
		str("node_id", p.envoy.boot.Node.GetId()),
	}
	if upstream != "" {
		attrs = append(attrs, str("upstream_cluster", upstream))
	}
	for k, v := range s.trace.Attributes {
		attrs = append(attrs, str(k, v))
	}
	for k, name := range s.trace.Environment {
		if v, ok := p.environ(name); ok {
			attrs = append(attrs, str(k, v))
		}
	}
	sp := &tracev1.Span{
		TraceId: s.traceID, SpanId: s.spanID, ParentSpanId: s.parentSpanID, Name: "ingress", Kind: tracev1.Span_SPAN_KIND_SERVER,
		StartTimeUnixNano: uint64(s.start.UnixNano()), EndTimeUnixNano: uint64(time.Now().UnixNano()), Attributes: attrs,
	}
	if status >= 500 {
		sp.Status = &tracev1.Status{Code: tracev1.Status_STATUS_CODE_ERROR}
		sp.Attributes = append(sp.Attributes, str("error", "true"))
	}
	req := &collectortracev1.ExportTraceServiceRequest{ResourceSpans: []*tracev1.ResourceSpans{{
		Resource:   &resourcev1.Resource{Attributes: []*commonv1.KeyValue{str("service.name", s.trace.ServiceName)}},
		ScopeSpans: []*tracev1.ScopeSpans{{Scope: &commonv1.InstrumentationScope{Name: "envoy"}, Spans: []*tracev1.Span{sp}}},
	}}}
	timeout := s.trace.Timeout
	if timeout == 0 {
		timeout = 5 * time.Second
	}
	go func() {
		ctx, cancel, endpoint := p.reach(context.Background(), &s.trace.Collector, timeout)
		defer cancel()
		if endpoint == "" {
			p.logf("tracing: collector %s has no healthy endpoint: span dropped", s.trace.Collector.Cluster)
			return
		}
		conn, err := p.grpcClient(sim, &s.trace.Collector, endpoint, s.trace.Authority)
		if err != nil {
			p.logf("tracing: %v", err)
			return
		}
		defer conn.Close()
		if _, err := collectortracev1.NewTraceServiceClient(conn).Export(ctx, req); err != nil {
			p.logf("tracing: export to %s: %v", s.trace.Collector.Cluster, err)
		}
	}()
}

func str(k, v string) *commonv1.KeyValue {
	return &commonv1.KeyValue{Key: k, Value: &commonv1.AnyValue{Value: &commonv1.AnyValue_StringValue{StringValue: v}}}
}

// environ is a variable of the Envoy process's environment: the Pod's,
// when the one running it says (SetEnvironment), else this process's.
func (p *proxy) environ(name string) (string, bool) {
	if env := p.envoy.environment; env != nil {
		v, ok := env[name]
		return v, ok
	}
	return os.LookupEnv(name)
}
