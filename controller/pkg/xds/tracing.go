package xds

import (
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	tracev3 "github.com/envoyproxy/go-control-plane/envoy/config/trace/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	tracingv3 "github.com/envoyproxy/go-control-plane/envoy/type/tracing/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"isobar.dev/controller/pkg/ir"
)

// tracing is a connection manager's tracing: Envoy's OpenTelemetry tracer
// exporting to the collector's cluster over gRPC, as Contour configures
// it; nil for none.
func tracing(t *ir.Tracing) *hcmv3.HttpConnectionManager_Tracing {
	if t == nil {
		return nil
	}
	grpc := &corev3.GrpcService{TargetSpecifier: &corev3.GrpcService_EnvoyGrpc_{EnvoyGrpc: &corev3.GrpcService_EnvoyGrpc{
		ClusterName: t.Cluster, Authority: t.Authority,
	}}}
	if t.Timeout > 0 {
		grpc.Timeout = durationpb.New(t.Timeout)
	}
	out := &hcmv3.HttpConnectionManager_Tracing{
		OverallSampling:  &typev3.Percent{Value: t.Sampling},
		MaxPathTagLength: wrapperspb.UInt32(t.MaxPathTagLength),
		Provider: &tracev3.Tracing_Http{
			Name:       "envoy.tracers.opentelemetry",
			ConfigType: &tracev3.Tracing_Http_TypedConfig{TypedConfig: typed(&tracev3.OpenTelemetryConfig{GrpcService: grpc, ServiceName: t.ServiceName})},
		},
	}
	// Envoy's default is 100 for both: only a lower share is sent.
	if t.ClientSampling < 100 {
		out.ClientSampling = &typev3.Percent{Value: t.ClientSampling}
	}
	if t.RandomSampling < 100 {
		out.RandomSampling = &typev3.Percent{Value: t.RandomSampling}
	}
	for _, tag := range t.Tags {
		ct := &tracingv3.CustomTag{Tag: tag.Name}
		switch {
		case tag.Header != "":
			ct.Type = &tracingv3.CustomTag_RequestHeader{RequestHeader: &tracingv3.CustomTag_Header{Name: tag.Header}}
		case tag.Environment != "":
			ct.Type = &tracingv3.CustomTag_Environment_{Environment: &tracingv3.CustomTag_Environment{Name: tag.Environment}}
		default:
			ct.Type = &tracingv3.CustomTag_Literal_{Literal: &tracingv3.CustomTag_Literal{Value: tag.Literal}}
		}
		out.CustomTags = append(out.CustomTags, ct)
	}
	return out
}
