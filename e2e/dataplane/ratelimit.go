package dataplane

import (
	"context"

	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"

	"isobar.dev/controller/pkg/envoysim"
)

// rateLimit is Envoy's rate limit filter asking the Gateway's rate limit
// service about a request, over a real gRPC connection, within the
// filter's timeout.
func (p *proxy) rateLimit(ctx context.Context, sim *envoysim.Simulator, c *envoysim.RateLimitCheck) envoysim.RateLimitVerdict {
	ctx, cancel, endpoint := p.reach(ctx, &c.Server, c.Timeout)
	defer cancel()
	if endpoint == "" {
		return c.Unreachable()
	}
	conn, err := p.grpcClient(sim, &c.Server, endpoint, c.Authority)
	if err != nil {
		return c.Unreachable()
	}
	defer conn.Close()
	resp, err := rlsv3.NewRateLimitServiceClient(conn).ShouldRateLimit(ctx, c.Request())
	if err != nil {
		p.logf("rate limit service %s: %v", c.Server.Cluster, err)
		return c.Unreachable()
	}
	return c.Verdict(resp)
}
