package xds

import (
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	localratelimitv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/local_ratelimit/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"isobar.dev/controller/pkg/ir"
)

// localRateLimitFilter is Envoy's local rate limit filter. Every
// connection manager has it, without a token bucket of its own (it limits
// nothing); a virtual host or route with a local rate limit gives it one.
const localRateLimitFilter = "envoy.filters.http.local_ratelimit"

// localRateLimit is a token bucket for the local rate limit filter's
// per-route (or per virtual host) configuration, always enforced. Envoy
// answers a request that finds no token 429 (or the status given), adds
// x-envoy-ratelimited and the limit's response headers.
func localRateLimit(l *ir.LocalRateLimit, statPrefix string) *localratelimitv3.LocalRateLimit {
	all := &corev3.RuntimeFractionalPercent{DefaultValue: &typev3.FractionalPercent{Numerator: 100, Denominator: typev3.FractionalPercent_HUNDRED}}
	out := &localratelimitv3.LocalRateLimit{
		StatPrefix: statPrefix,
		TokenBucket: &typev3.TokenBucket{
			MaxTokens:     l.Max,
			TokensPerFill: wrapperspb.UInt32(l.PerFill),
			FillInterval:  durationpb.New(l.FillInterval),
		},
		FilterEnabled:  all,
		FilterEnforced: all,
	}
	if l.Status != 0 {
		out.Status = &typev3.HttpStatus{Code: typev3.StatusCode(l.Status)}
	}
	for _, h := range l.ResponseHeaders {
		v := h.Value
		if !h.Formatted {
			v = literal(v)
		}
		out.ResponseHeadersToAdd = append(out.ResponseHeadersToAdd, &corev3.HeaderValueOption{
			Header:       &corev3.HeaderValue{Key: h.Name, Value: v},
			AppendAction: corev3.HeaderValueOption_OVERWRITE_IF_EXISTS_OR_ADD,
		})
	}
	return out
}

// virtualHostHead is a virtual host's message without its routes: its
// name, domains and what its policy configures of the HTTP filters.
func virtualHostHead(v *ir.VirtualHost) *routev3.VirtualHost {
	head := &routev3.VirtualHost{Name: v.Name, Domains: v.Domains}
	if p := v.Policy; p != nil && p.LocalRateLimit != nil {
		head.TypedPerFilterConfig = map[string]*anypb.Any{localRateLimitFilter: typed(localRateLimit(p.LocalRateLimit, "vhost."+v.Name))}
	}
	if p := v.Policy; p != nil && len(p.GlobalRateLimits) > 0 {
		head.RateLimits = rateLimits(p.GlobalRateLimits)
	}
	return head
}
