package dataplane

import (
	"context"
	"io"
	"math/rand/v2"
	"net"
	"strings"
	"time"

	authv3 "github.com/envoyproxy/go-control-plane/envoy/service/auth/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"isobar.dev/controller/pkg/envoysim"
)

// authorize is Envoy's ext_authz filter asking a route's authorization
// server about a request, over a real connection: an HTTP check, or a
// CheckRequest over gRPC. A server that cannot be asked denies (403).
func (p *proxy) authorize(ctx context.Context, sim *envoysim.Simulator, z *envoysim.Authorization, body []byte) envoysim.Verdict {
	if v := z.TooLong(body); v != nil {
		return *v
	}
	ctx, cancel, endpoint := p.reach(ctx, &z.Server, z.Timeout)
	defer cancel()
	if endpoint == "" {
		return z.Unreachable()
	}
	if z.GRPC {
		return p.authorizeGRPC(ctx, sim, z, endpoint, body)
	}
	check, sent := z.CheckHTTP(body)
	resp, err := p.attempt(ctx, sim, target{cluster: z.Server.Cluster, http2: z.Server.HTTP2, tls: z.Server.TLS, request: check}, endpoint, sent)
	if err != nil {
		return z.Unreachable()
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(resp.Body)
	if err != nil {
		return z.Unreachable()
	}
	v, err := z.HTTPVerdict(resp.StatusCode, headerList(resp.Header), string(answer))
	if err != nil {
		p.logf("authorization by %s: %v", z.Server.Cluster, err)
		return z.Unreachable()
	}
	return v
}

// authorizeGRPC asks a gRPC authorization server.
func (p *proxy) authorizeGRPC(ctx context.Context, sim *envoysim.Simulator, z *envoysim.Authorization, endpoint string, body []byte) envoysim.Verdict {
	conn, err := p.grpcClient(sim, &z.Server, endpoint, z.Authority)
	if err != nil {
		return z.Unreachable()
	}
	defer conn.Close()
	resp, err := authv3.NewAuthorizationClient(conn).Check(ctx, z.CheckGRPC(body))
	if err != nil {
		return z.Unreachable()
	}
	return z.GRPCVerdict(resp)
}

// reach bounds ctx by a filter's timeout for its server (none when 0) and
// picks one of the server's endpoints, "" when none is healthy.
func (p *proxy) reach(ctx context.Context, server *envoysim.Backend, timeout time.Duration) (context.Context, context.CancelFunc, string) {
	cancel := context.CancelFunc(func() {})
	if timeout > 0 {
		ctx, cancel = context.WithTimeout(ctx, timeout)
	}
	return ctx, cancel, p.health.pick(ctx, server, rand.Uint64())
}

// grpcClient is Envoy's gRPC client to an endpoint of a cluster: HTTP/2
// to the endpoint, over the cluster's TLS if it has one.
func (p *proxy) grpcClient(sim *envoysim.Simulator, server *envoysim.Backend, endpoint, authority string) (*grpc.ClientConn, error) {
	dial := func(ctx context.Context, addr string) (net.Conn, error) {
		c, err := p.upstream(ctx, "tcp", addr)
		if err != nil || server.TLS == nil {
			return c, err
		}
		return p.upstreamTLS(ctx, c, sim, server.Cluster, server.TLS, []string{"h2"})
	}
	return grpc.NewClient("passthrough:///"+endpoint, grpc.WithContextDialer(dial),
		grpc.WithTransportCredentials(insecure.NewCredentials()), grpc.WithAuthority(authority))
}

// withHeaders sets an allowing server's headers on the request a backend
// gets, over any of the same name.
func withHeaders(r *envoysim.HTTPRequest, set []envoysim.Header) {
	if r == nil || len(set) == 0 {
		return
	}
	var out []envoysim.Header
	for _, h := range r.Headers {
		keep := true
		for _, s := range set {
			keep = keep && !strings.EqualFold(h.Name, s.Name)
		}
		if keep {
			out = append(out, h)
		}
	}
	r.Headers = append(out, set...)
}
