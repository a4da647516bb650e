package envoysim

import (
	"time"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	localratelimitv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/local_ratelimit/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"google.golang.org/protobuf/types/known/anypb"
)

const localRateLimitFilterName = "envoy.filters.http.local_ratelimit"

// localRateLimitFilter checks the local rate limit filter's own
// configuration: the simulator models one without a token bucket of its
// own (it limits nothing), which routes and virtual hosts give buckets.
func localRateLimitFilter(hf *hcmv3.HttpFilter) error {
	cfg, err := unpack[localratelimitv3.LocalRateLimit](hf.GetTypedConfig(), "local rate limit filter")
	if err != nil {
		return err
	}
	return understand(cfg, "stat_prefix")
}

// bucket is a token bucket's state: the tokens left, as of when it was
// last filled.
type bucket struct {
	tokens uint32
	filled time.Time
}

// rateLimited applies the local rate limit of a route, or else of its
// virtual host (Envoy takes the most specific), to a request: it takes a
// token from the limit's bucket, which Envoy keeps for as long as the
// configuration, or returns Envoy's answer when there is none. A replayed
// request takes no token.
func (s *Simulator) rateLimited(vh *routev3.VirtualHost, rt *routev3.Route, replay bool) (*Response, error) {
	cfg := perFilterConfig(vh, rt, localRateLimitFilterName)
	if cfg == nil {
		return nil, nil
	}
	l, err := unpack[localratelimitv3.LocalRateLimit](cfg, "local rate limit")
	if err != nil {
		return nil, err
	}
	if err := understand(l, "stat_prefix", "token_bucket", "filter_enabled", "filter_enforced", "status", "response_headers_to_add"); err != nil {
		return nil, err
	}
	for _, p := range []interface {
		GetDefaultValue() *typev3.FractionalPercent
		GetRuntimeKey() string
	}{l.GetFilterEnabled(), l.GetFilterEnforced()} {
		v := p.GetDefaultValue()
		if v.GetNumerator() != 100 || v.GetDenominator() != typev3.FractionalPercent_HUNDRED || p.GetRuntimeKey() != "" {
			return nil, errUnsupportedf("a local rate limit not enabled and enforced for every request")
		}
	}
	tb := l.GetTokenBucket()
	if tb == nil {
		return nil, nil
	}
	if err := understand(tb, "max_tokens", "tokens_per_fill", "fill_interval"); err != nil {
		return nil, err
	}
	if replay {
		return nil, nil
	}
	perFill := uint32(1)
	if tb.GetTokensPerFill() != nil {
		perFill = tb.GetTokensPerFill().GetValue()
	}
	interval := tb.GetFillInterval().AsDuration()
	now := time.Now()
	s.mu.Lock()
	b := s.buckets[cfg]
	if b == nil {
		b = &bucket{tokens: tb.GetMaxTokens(), filled: now}
		s.buckets[cfg] = b
	}
	if fills := now.Sub(b.filled) / interval; fills > 0 {
		b.tokens = uint32(min(uint64(tb.GetMaxTokens()), uint64(b.tokens)+uint64(fills)*uint64(perFill)))
		b.filled = b.filled.Add(fills * interval)
	}
	allowed := b.tokens > 0
	if allowed {
		b.tokens--
	}
	s.mu.Unlock()
	if allowed {
		return nil, nil
	}
	status := 429
	if l.GetStatus() != nil {
		status = int(l.GetStatus().GetCode())
	}
	headers, err := mutation{add: l.GetResponseHeadersToAdd()}.apply([]Header{{Name: "x-envoy-ratelimited", Value: "true"}}, streamInfo{})
	if err != nil {
		return nil, err
	}
	return &Response{Status: status, Headers: headers, Body: "local_rate_limited"}, nil
}

// perFilterConfig is an HTTP filter's configuration for a route: the
// route's own, else its virtual host's, as Envoy takes the most specific.
func perFilterConfig(vh *routev3.VirtualHost, rt *routev3.Route, filter string) *anypb.Any {
	for _, m := range []map[string]*anypb.Any{rt.GetTypedPerFilterConfig(), vh.GetTypedPerFilterConfig()} {
		if a, ok := m[filter]; ok {
			return a
		}
	}
	return nil
}
