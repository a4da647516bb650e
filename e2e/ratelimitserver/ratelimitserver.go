// Package ratelimitserver is a global rate limit service speaking Envoy's
// gRPC protocol (envoy.service.ratelimit.v3.RateLimitService), which the
// e2e tests run as a real server: in process, and in the fleet as a Pod
// (cmd/ratelimit-server). It does what envoyproxy/ratelimit does with one
// rule for every descriptor: Limit requests a minute.
package ratelimitserver

import (
	"context"
	"strings"
	"sync"
	"time"

	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/protobuf/types/known/durationpb"
)

// Server limits each distinct descriptor of a domain to Limit requests a
// minute, counted from the first request of the minute.
type Server struct {
	rlsv3.UnimplementedRateLimitServiceServer
	Limit uint32

	mu     sync.Mutex
	window time.Time
	hits   map[string]uint32
}

// ShouldRateLimit answers one request: OVER_LIMIT when a descriptor has
// had more than Limit hits this minute, with every descriptor's status.
func (s *Server) ShouldRateLimit(_ context.Context, req *rlsv3.RateLimitRequest) (*rlsv3.RateLimitResponse, error) {
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.window.IsZero() || now.Sub(s.window) >= time.Minute {
		s.window, s.hits = now, map[string]uint32{}
	}
	hits := max(req.GetHitsAddend(), 1)
	out := &rlsv3.RateLimitResponse{OverallCode: rlsv3.RateLimitResponse_OK}
	for _, d := range req.GetDescriptors() {
		var key strings.Builder
		key.WriteString(req.GetDomain())
		for _, e := range d.GetEntries() {
			key.WriteString("|" + e.GetKey() + "=" + e.GetValue())
		}
		s.hits[key.String()] += hits
		n := s.hits[key.String()]
		st := &rlsv3.RateLimitResponse_DescriptorStatus{
			Code:               rlsv3.RateLimitResponse_OK,
			CurrentLimit:       &rlsv3.RateLimitResponse_RateLimit{RequestsPerUnit: s.Limit, Unit: rlsv3.RateLimitResponse_RateLimit_MINUTE},
			DurationUntilReset: durationpb.New(s.window.Add(time.Minute).Sub(now).Round(time.Second)),
		}
		if n > s.Limit {
			st.Code, out.OverallCode = rlsv3.RateLimitResponse_OVER_LIMIT, rlsv3.RateLimitResponse_OVER_LIMIT
		} else {
			st.LimitRemaining = s.Limit - n
		}
		out.Statuses = append(out.Statuses, st)
	}
	return out, nil
}
