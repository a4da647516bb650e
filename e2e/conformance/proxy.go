package conformance

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/netip"
	"os"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"

	"isobar.dev/controller/pkg/envoysim"
	"isobar.dev/e2e/dataplane"
)

// serviceCIDR is a loopback range: every Service's cluster IP is an
// address this machine can listen on and dial, so the suite's TCP, TLS and
// UDP clients can dial a Gateway's address as they would in a cluster.
const serviceCIDR = "127.64.0.0/16"

// proxy stands in for kube-proxy and Envoy's sockets: it listens on the
// cluster IP and ports of every Service in front of simulated Envoys, and
// plays each connection or datagram through that Envoy's xDS (envoysim:
// listener, filter chain by SNI, TLS termination with the certificate
// served, cluster and endpoint) to the echo backend the rig runs for the
// endpoint's Pod.
type proxy struct {
	fleet *fleet
	// open are the listeners, by protocol and address, with their close.
	open map[string]func()
}

func (p *proxy) run(ctx context.Context) {
	p.open = map[string]func(){}
	defer func() {
		for _, stop := range p.open {
			stop()
		}
	}()
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(500 * time.Millisecond):
		}
		p.sync(ctx)
	}
}

// sync listens on the addresses of the Envoy Services there are, and stops
// listening on those of Services gone.
func (p *proxy) sync(ctx context.Context) {
	var services corev1.ServiceList
	if err := p.fleet.env.Client.List(ctx, &services); err != nil {
		return
	}
	cidr := netip.MustParsePrefix(serviceCIDR)
	want := map[string]bool{}
	for _, s := range services.Items {
		ip, err := netip.ParseAddr(s.Spec.ClusterIP)
		if err != nil || !cidr.Contains(ip) || s.Spec.Selector[componentLabel] != envoyComponent {
			continue
		}
		for _, port := range s.Spec.Ports {
			addr := net.JoinHostPort(s.Spec.ClusterIP, strconv.Itoa(int(port.Port)))
			key := string(port.Protocol) + "/" + addr
			want[key] = true
			if p.open[key] != nil {
				continue
			}
			stop, err := p.listen(ctx, port.Protocol, addr)
			if err != nil {
				fmt.Fprintf(os.Stderr, "proxy: %v\n", err)
				continue
			}
			p.open[key] = stop
		}
	}
	for key, stop := range p.open {
		if !want[key] {
			stop()
			delete(p.open, key)
		}
	}
}

func (p *proxy) listen(ctx context.Context, protocol corev1.Protocol, addr string) (func(), error) {
	host, port, _ := net.SplitHostPort(addr)
	if protocol == corev1.ProtocolUDP {
		pc, err := net.ListenPacket("udp", addr)
		if err != nil {
			return nil, err
		}
		go func() {
			buf := make([]byte, 64*1024)
			for {
				n, from, err := pc.ReadFrom(buf)
				if err != nil {
					return
				}
				go p.serveDatagram(ctx, pc, from, host, port, bytes.Clone(buf[:n]))
			}
		}()
		return func() { _ = pc.Close() }, nil
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go p.serveConn(ctx, c, host, port)
		}
	}()
	return func() { _ = l.Close() }, nil
}

// serveConn is a TCP connection to an Envoy listener: as Envoy does, it
// closes connections no filter chain or cluster takes.
func (p *proxy) serveConn(ctx context.Context, c net.Conn, host, port string) {
	defer c.Close()
	envoy, target, err := p.fleet.envoyAt(ctx, host, port, "tcp")
	if err != nil {
		return
	}
	sim, err := envoy.Simulator()
	if err != nil {
		return
	}
	hello, conn := peekClientHello(c)
	req := envoysim.Request{Port: target, Seed: rand.Uint64()}
	if hello != nil {
		req.TLS, req.SNI, req.ALPN = true, hello.ServerName, hello.SupportedProtos
	}
	a, err := sim.Simulate(req)
	if err != nil {
		fmt.Fprintf(os.Stderr, "proxy: %s:%s: %v\n", host, port, err)
		return
	}
	b := a.Upstream
	if a.Filter != tcpProxyFilter || b == nil || b.Status != 0 || len(b.Endpoints) == 0 || b.TLS != nil {
		return
	}
	var down net.Conn = conn
	if len(a.DownstreamTLS) > 0 {
		cert, err := serving(envoy, a.DownstreamTLS)
		if err != nil {
			fmt.Fprintf(os.Stderr, "proxy: %s:%s: %v\n", host, port, err)
			return
		}
		tc := tls.Server(conn, &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12})
		if err := tc.HandshakeContext(ctx); err != nil {
			return
		}
		down = tc
	}
	endpoint := b.Pick(rand.Uint64())
	pod, err := p.fleet.podAt(ctx, endpoint)
	if err != nil {
		return
	}
	_, epPort, _ := net.SplitHostPort(endpoint)
	p.fleet.backends.serveTCP(ctx, p.fleet, pod, epPort, down)
}

// serveDatagram is a UDP datagram to an Envoy listener; the backend's
// answer comes back from the listener's address, as Envoy's UDP proxy
// sends it.
func (p *proxy) serveDatagram(ctx context.Context, pc net.PacketConn, from net.Addr, host, port string, data []byte) {
	envoy, target, err := p.fleet.envoyAt(ctx, host, port, "udp")
	if err != nil {
		return
	}
	sim, err := envoy.Simulator()
	if err != nil {
		return
	}
	a, err := sim.Simulate(envoysim.Request{Port: target, UDP: true, Seed: rand.Uint64()})
	if err != nil {
		fmt.Fprintf(os.Stderr, "proxy: udp %s:%s: %v\n", host, port, err)
		return
	}
	b := a.Upstream
	if b == nil || b.Status != 0 || len(b.Endpoints) == 0 {
		return
	}
	pod, err := p.fleet.podAt(ctx, b.Pick(rand.Uint64()))
	if err != nil {
		return
	}
	if answer := p.fleet.backends.answerUDP(pod, data); answer != nil {
		_, _ = pc.WriteTo(answer, from)
	}
}

// serving is the certificate and key of the first of the Envoy's SDS
// secrets a filter chain presents.
func serving(e *dataplane.Envoy, secrets []string) (tls.Certificate, error) {
	s := e.Secret(secrets[0])
	if s == nil {
		return tls.Certificate{}, fmt.Errorf("secret %s is not served", secrets[0])
	}
	return tls.X509KeyPair(s.GetTlsCertificate().GetCertificateChain().GetInlineBytes(), s.GetTlsCertificate().GetPrivateKey().GetInlineBytes())
}

// peekClientHello reads a TLS ClientHello if the client starts with one
// (a client of a plain TCP echo waits for the server to speak first, so a
// short silence means plain TCP) and returns a connection that replays
// what was read.
func peekClientHello(c net.Conn) (*tls.ClientHelloInfo, net.Conn) {
	rec := &recorder{Conn: c}
	_ = c.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	var hello *tls.ClientHelloInfo
	errDone := errors.New("peeked")
	_ = tls.Server(rec, &tls.Config{GetConfigForClient: func(h *tls.ClientHelloInfo) (*tls.Config, error) {
		hello = h
		return nil, errDone
	}}).Handshake()
	_ = c.SetReadDeadline(time.Time{})
	return hello, &replay{Conn: c, r: io.MultiReader(bytes.NewReader(rec.read.Bytes()), c)}
}

// recorder keeps what is read and writes nothing (the peek's alert must
// not reach the client).
type recorder struct {
	net.Conn
	read bytes.Buffer
}

func (r *recorder) Read(b []byte) (int, error) {
	n, err := r.Conn.Read(b)
	r.read.Write(b[:n])
	return n, err
}

func (r *recorder) Write(b []byte) (int, error) { return len(b), nil }

type replay struct {
	net.Conn
	r  io.Reader
	mu sync.Mutex
}

func (r *replay) Read(b []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.r.Read(b)
}
