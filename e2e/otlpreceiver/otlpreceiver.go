// Package otlpreceiver is the OpenTelemetry collector of the e2e tests: an
// OTLP/gRPC trace service that keeps the spans it receives, in the tests'
// own process, or the fleet's as a Pod (cmd/otlp-collector), which prints
// each as a line of JSON.
package otlpreceiver

import (
	"context"
	"sync"

	collectortracev1 "go.opentelemetry.io/proto/otlp/collector/trace/v1"
)

// Span is a received span as the tests check it.
type Span struct {
	Service    string            `json:"service"`
	Name       string            `json:"name"`
	Kind       string            `json:"kind"`
	TraceID    string            `json:"traceID"`
	ParentID   string            `json:"parentID,omitempty"`
	Attributes map[string]string `json:"attributes"`
	Error      bool              `json:"error,omitempty"`
}

// Receiver keeps the spans it receives, and hands each to OnSpan.
type Receiver struct {
	collectortracev1.UnimplementedTraceServiceServer
	OnSpan func(Span)

	mu    sync.Mutex
	spans []Span
}

func (r *Receiver) Export(_ context.Context, req *collectortracev1.ExportTraceServiceRequest) (*collectortracev1.ExportTraceServiceResponse, error) {
	for _, rs := range req.GetResourceSpans() {
		service := ""
		for _, kv := range rs.GetResource().GetAttributes() {
			if kv.GetKey() == "service.name" {
				service = kv.GetValue().GetStringValue()
			}
		}
		for _, ss := range rs.GetScopeSpans() {
			for _, sp := range ss.GetSpans() {
				s := Span{Service: service, Name: sp.GetName(), Kind: sp.GetKind().String(), TraceID: hexOf(sp.GetTraceId()),
					ParentID: hexOf(sp.GetParentSpanId()), Attributes: map[string]string{}, Error: sp.GetStatus().GetCode() == 2}
				for _, kv := range sp.GetAttributes() {
					s.Attributes[kv.GetKey()] = kv.GetValue().GetStringValue()
				}
				r.mu.Lock()
				r.spans = append(r.spans, s)
				r.mu.Unlock()
				if r.OnSpan != nil {
					r.OnSpan(s)
				}
			}
		}
	}
	return &collectortracev1.ExportTraceServiceResponse{}, nil
}

// Spans are the spans received so far.
func (r *Receiver) Spans() []Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Span(nil), r.spans...)
}

func hexOf(b []byte) string {
	const digits = "0123456789abcdef"
	out := make([]byte, 0, 2*len(b))
	for _, c := range b {
		out = append(out, digits[c>>4], digits[c&15])
	}
	return string(out)
}
