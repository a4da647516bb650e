package xds

import (
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	ratelimitconfigv3 "github.com/envoyproxy/go-control-plane/envoy/config/ratelimit/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	ratelimitv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ratelimit/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"isobar.dev/controller/pkg/ir"
)

// globalRateLimitFilter is Envoy's rate limit filter: it asks the
// Gateway's rate limit service about the requests whose route or virtual
// host has descriptors, and answers 429 to those it limits. Connection
// managers have it only when the Gateway has a service.
const globalRateLimitFilter = "envoy.filters.http.ratelimit"

func globalRateLimitHTTPFilter(s *ir.RateLimitService) *hcmv3.HttpFilter {
	cfg := &ratelimitv3.RateLimit{
		Domain:          s.Domain,
		Timeout:         duration(s.Timeout),
		FailureModeDeny: !s.FailOpen,
		RateLimitService: &ratelimitconfigv3.RateLimitServiceConfig{
			GrpcService: &corev3.GrpcService{TargetSpecifier: &corev3.GrpcService_EnvoyGrpc_{EnvoyGrpc: &corev3.GrpcService_EnvoyGrpc{
				ClusterName: s.Cluster, Authority: s.Authority,
			}}},
			TransportApiVersion: corev3.ApiVersion_V3,
		},
		RateLimitedAsResourceExhausted: s.ResourceExhausted,
	}
	if s.XRateLimitHeaders {
		cfg.EnableXRatelimitHeaders = ratelimitv3.RateLimit_DRAFT_VERSION_03
	}
	return &hcmv3.HttpFilter{Name: globalRateLimitFilter, ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: typed(cfg)}}
}

// rateLimits are descriptors as Envoy's rate limit actions.
func rateLimits(descriptors []ir.RateLimitDescriptor) []*routev3.RateLimit {
	out := make([]*routev3.RateLimit, 0, len(descriptors))
	for _, d := range descriptors {
		rl := &routev3.RateLimit{}
		for _, e := range d.Entries {
			rl.Actions = append(rl.Actions, rateLimitAction(e))
		}
		out = append(out, rl)
	}
	return out
}

func rateLimitAction(e ir.RateLimitEntry) *routev3.RateLimit_Action {
	switch {
	case e.RemoteAddress:
		return &routev3.RateLimit_Action{ActionSpecifier: &routev3.RateLimit_Action_RemoteAddress_{RemoteAddress: &routev3.RateLimit_Action_RemoteAddress{}}}
	case e.Header != "":
		return &routev3.RateLimit_Action{ActionSpecifier: &routev3.RateLimit_Action_RequestHeaders_{RequestHeaders: &routev3.RateLimit_Action_RequestHeaders{
			HeaderName: e.Header, DescriptorKey: e.Key,
		}}}
	case len(e.Headers) > 0:
		return &routev3.RateLimit_Action{ActionSpecifier: &routev3.RateLimit_Action_HeaderValueMatch_{HeaderValueMatch: &routev3.RateLimit_Action_HeaderValueMatch{
			DescriptorValue: e.Value, ExpectMatch: wrapperspb.Bool(e.ExpectMatch),
			Headers: headerMatchers(&ir.Match{Headers: e.Headers}, &routeMessages{}),
		}}}
	}
	return &routev3.RateLimit_Action{ActionSpecifier: &routev3.RateLimit_Action_GenericKey_{GenericKey: &routev3.RateLimit_Action_GenericKey{
		DescriptorKey: e.Key, DescriptorValue: e.Value,
	}}}
}

// ignoreVirtualHostRateLimits keeps a route without descriptors of its
// own from being asked about with its virtual host's.
var ignoreVirtualHostRateLimits = &ratelimitv3.RateLimitPerRoute{VhRateLimits: ratelimitv3.RateLimitPerRoute_IGNORE}
