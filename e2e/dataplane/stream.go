package dataplane

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"sync"
	"time"

	"isobar.dev/controller/pkg/envoysim"
)

// connectTimeout bounds a connection to a backend (Envoy's cluster
// connect_timeout defaults to 5 s).
const connectTimeout = 5 * time.Second

// udpSessionIdle is how long Envoy's UDP proxy keeps a session without
// traffic (UdpProxyConfig.idle_timeout's default, one minute).
const udpSessionIdle = time.Minute

// serveTCPProxy is the TCP proxy filter: a connection to an endpoint of
// the chosen cluster (over TLS when the cluster says so), bytes both ways.
// Envoy closes the client's connection when the cluster has no endpoint or
// the backend cannot be reached.
func (p *proxy) serveTCPProxy(ctx context.Context, conn net.Conn, d *downstream) {
	defer conn.Close()
	sim, err := p.envoy.Simulator()
	if err != nil {
		return
	}
	a, err := sim.Simulate(d.request())
	if err != nil {
		p.logf("port %d: %v", d.port, err)
		return
	}
	b := a.Upstream
	if b == nil || b.Status != 0 || len(b.Endpoints) == 0 {
		return
	}
	cctx, cancel := context.WithTimeout(ctx, connectTimeout)
	defer cancel()
	endpoint := p.health.pick(cctx, b, rand.Uint64())
	if endpoint == "" {
		return // no healthy endpoint: Envoy closes the connection
	}
	up, err := p.upstream(cctx, "tcp", endpoint)
	if err != nil {
		return
	}
	if b.TLS != nil {
		if up, err = p.upstreamTLS(cctx, up, sim, b.Cluster, b.TLS, b.TLS.ALPN); err != nil {
			return
		}
	}
	Pipe(conn, up)
}

// Pipe copies bytes both ways until either side ends, then closes both.
func Pipe(a, b net.Conn) {
	done := make(chan struct{}, 2)
	cp := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		done <- struct{}{}
	}
	go cp(a, b)
	go cp(b, a)
	<-done
	a.Close()
	b.Close()
	<-done
}

// serveUDP is the UDP proxy filter: each client address is a session with
// an endpoint of the listener's cluster; what the endpoint answers goes
// back to the client from the listener's address.
func (p *proxy) serveUDP(ctx context.Context, pc net.PacketConn, port uint32) {
	RelayUDP(ctx, pc, func(ctx context.Context) (net.Conn, error) {
		sim, err := p.envoy.Simulator()
		if err != nil {
			return nil, err
		}
		a, err := sim.Simulate(envoysim.Request{Port: port, UDP: true, Seed: rand.Uint64()})
		if err != nil {
			return nil, err
		}
		b := a.Upstream
		if b == nil || b.Status != 0 || len(b.Endpoints) == 0 {
			return nil, fmt.Errorf("udp port %d: no endpoint", port)
		}
		return p.upstream(ctx, "udp", b.Pick(rand.Uint64()))
	})
}

// RelayUDP relays datagrams that reach pc, per client address, to a peer
// open returns for that client's session, and the peer's answers back to
// the client, until pc is closed. A session ends after a minute without
// traffic.
func RelayUDP(ctx context.Context, pc net.PacketConn, open func(context.Context) (net.Conn, error)) {
	var mu sync.Mutex
	sessions := map[string]net.Conn{}
	buf := make([]byte, 64<<10)
	for {
		n, from, err := pc.ReadFrom(buf)
		if err != nil {
			mu.Lock()
			for _, s := range sessions {
				s.Close()
			}
			mu.Unlock()
			return
		}
		key := from.String()
		mu.Lock()
		s := sessions[key]
		mu.Unlock()
		if s == nil {
			if s, err = open(ctx); err != nil {
				continue
			}
			mu.Lock()
			sessions[key] = s
			mu.Unlock()
			go func() {
				defer func() {
					mu.Lock()
					delete(sessions, key)
					mu.Unlock()
					s.Close()
				}()
				answer := make([]byte, 64<<10)
				for {
					_ = s.SetReadDeadline(time.Now().Add(udpSessionIdle))
					n, err := s.Read(answer)
					if err != nil {
						return
					}
					if _, err := pc.WriteTo(answer[:n], from); err != nil {
						return
					}
				}
			}()
		}
		_, _ = s.Write(buf[:n])
	}
}

// upgrade carries an upgraded connection (WebSocket) through: the upgrade
// request goes to an endpoint as the route changed it, and once the
// backend switches protocols, bytes flow both ways.
func (p *proxy) upgrade(w http.ResponseWriter, r *http.Request, sim *envoysim.Simulator, a *envoysim.Answer) {
	b := a.Upstream
	if unavailable(w, r, a) {
		return
	}
	hj, ok := w.(http.Hijacker)
	if !ok {
		localReply(w, r, &envoysim.Response{Status: http.StatusNotImplemented, Body: "simulated Envoy: upgrades over HTTP/2 are not simulated"})
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), connectTimeout)
	defer cancel()
	endpoint := p.health.pick(ctx, b, rand.Uint64())
	if endpoint == "" {
		localReply(w, r, &envoysim.Response{Status: http.StatusServiceUnavailable, Body: "no healthy upstream"})
		return
	}
	up, err := p.upstream(ctx, "tcp", endpoint)
	if err == nil && b.TLS != nil {
		up, err = p.upstreamTLS(ctx, up, sim, b.Cluster, b.TLS, []string{"http/1.1"})
	}
	if err != nil {
		localReply(w, r, outcome(envoysim.WasReset))
		return
	}
	rq := b.Request
	fmt.Fprintf(up, "%s %s HTTP/1.1\r\nHost: %s\r\n", rq.Method, rq.Path, rq.Authority)
	for _, h := range rq.Headers {
		fmt.Fprintf(up, "%s: %s\r\n", h.Name, h.Value)
	}
	fmt.Fprint(up, "\r\n")
	br := bufio.NewReader(up)
	resp, err := http.ReadResponse(br, r)
	if err != nil {
		up.Close()
		localReply(w, r, outcome(envoysim.WasReset))
		return
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		defer up.Close()
		for k, vv := range resp.Header {
			w.Header()[k] = vv
		}
		w.WriteHeader(resp.StatusCode)
		_, _ = io.Copy(w, resp.Body)
		return
	}
	down, rw, err := hj.Hijack()
	if err != nil {
		up.Close()
		return
	}
	fmt.Fprintf(rw, "HTTP/1.1 101 Switching Protocols\r\n")
	_ = resp.Header.Write(rw)
	fmt.Fprint(rw, "\r\n")
	if err := rw.Flush(); err != nil {
		down.Close()
		up.Close()
		return
	}
	Pipe(&bufferedConn{Conn: down, r: rw.Reader}, &bufferedConn{Conn: up, r: br})
}

// bufferedConn reads through a reader that may hold bytes already read.
type bufferedConn struct {
	net.Conn
	r io.Reader
}

func (c *bufferedConn) Read(b []byte) (int, error) { return c.r.Read(b) }
