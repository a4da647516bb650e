package dataplane

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"sync"
	"time"

	"isobar.dev/controller/pkg/envoysim"
)

// handshakeTimeout bounds a TLS handshake with a client (Envoy's
// transport_socket_connect_timeout is unset: this only keeps a stuck
// client from holding a goroutine for ever).
const handshakeTimeout = 10 * time.Second

// downstream is what Envoy knows of a client's connection once its filter
// chain is chosen.
type downstream struct {
	port uint32
	// client is the address the connection comes from.
	client string
	// hello is the client's ClientHello, nil for plain text, and
	// helloRecords the records it came in, as the TLS inspector read them.
	hello        *tls.ClientHelloInfo
	helloRecords []byte
	// tls is set when Envoy terminated TLS.
	tls *tls.ConnectionState
	// proxied says the connection started with a PROXY protocol header
	// (client is then the header's source).
	proxied bool
}

// request is the envoysim request of an HTTP request on this connection,
// without the HTTP part.
func (d *downstream) request() envoysim.Request {
	r := envoysim.Request{Port: d.port, Seed: rand.Uint64(), ClientAddress: d.client, ProxyProtocol: d.proxied}
	if d.hello != nil {
		r.TLS, r.SNI, r.ALPN, r.ClientHello = true, d.hello.ServerName, d.hello.SupportedProtos, d.helloRecords
	}
	if d.tls != nil {
		var chain [][]byte
		for _, c := range d.tls.PeerCertificates {
			chain = append(chain, c.Raw)
		}
		r.ClientCertificate = func() [][]byte { return chain }
	}
	return r
}

// serveConn handles a TCP connection to a listener as Envoy does: the TLS
// inspector (when the listener has one) reads the ClientHello, the filter
// chain is chosen by port, SNI and ALPN, TLS is terminated with the served
// certificates when the chain says so, and the chain's network filter
// takes the connection. Envoy closes a connection no chain takes.
func (p *proxy) serveConn(ctx context.Context, c net.Conn, port uint32) {
	sim, err := p.envoy.Simulator()
	if err != nil {
		c.Close()
		return
	}
	d := &downstream{port: port}
	if a, ok := c.RemoteAddr().(*net.TCPAddr); ok {
		d.client = a.IP.String()
	}
	conn := c
	if proxied, err := sim.ExpectsProxyProtocol(port); err != nil {
		c.Close()
		return
	} else if proxied {
		src, rest, err := readProxyHeader(c, sim.ListenerFiltersTimeout(port))
		if err != nil {
			p.logf("port %d: %v", port, err)
			c.Close()
			return
		}
		d.proxied, d.client, conn = true, cmp.Or(src, d.client), rest
	}
	if inspect, err := sim.InspectsTLS(port); err != nil {
		c.Close()
		return
	} else if inspect {
		if d.hello, d.helloRecords, conn, err = inspectTLS(conn, sim.ListenerFiltersTimeout(port)); err != nil {
			c.Close()
			return
		}
	}
	cn, err := sim.Connect(d.request())
	if err != nil {
		p.logf("port %d: %v", port, err)
		c.Close()
		return
	}
	if cn.TLS != nil {
		tc, err := p.terminate(ctx, conn, cn.TLS)
		if err != nil {
			c.Close()
			return
		}
		st := tc.ConnectionState()
		d.tls, conn = &st, tc
	}
	switch cn.Filter {
	case "envoy.filters.network.http_connection_manager":
		p.serveHTTP(conn, d)
	default:
		p.serveTCPProxy(ctx, conn, d)
	}
}

// inspectTLS is the TLS inspector: it reads the connection's first bytes
// and, when they start a TLS handshake, its ClientHello (nil for plain
// text) and the bytes it came in. It waits for the first bytes up to
// timeout, then gives up, and Envoy closes the connection. The returned
// connection replays what was read.
func inspectTLS(c net.Conn, timeout time.Duration) (*tls.ClientHelloInfo, []byte, net.Conn, error) {
	_ = c.SetReadDeadline(time.Now().Add(timeout))
	defer func() { _ = c.SetReadDeadline(time.Time{}) }()
	br := bufio.NewReader(c)
	first, err := br.Peek(1)
	if err != nil {
		return nil, nil, nil, err
	}
	replay := &replayConn{Conn: c, r: br}
	if first[0] != 0x16 { // not a TLS handshake record
		return nil, nil, replay, nil
	}
	rec := &recorder{Conn: c, r: br}
	var hello *tls.ClientHelloInfo
	errPeeked := errors.New("peeked")
	_ = tls.Server(rec, &tls.Config{GetConfigForClient: func(h *tls.ClientHelloInfo) (*tls.Config, error) {
		hello = h
		return nil, errPeeked
	}}).Handshake()
	if hello == nil {
		return nil, nil, nil, errors.New("a TLS record that is not a ClientHello")
	}
	records := bytes.Clone(rec.read.Bytes())
	replay.r = io.MultiReader(bytes.NewReader(rec.read.Bytes()), br)
	return hello, records, replay, nil
}

// terminate does Envoy's side of a TLS handshake as the filter chain's
// context says: the served certificates, the versions and ALPN it allows,
// and the client certificate it asks for and how it verifies it.
func (p *proxy) terminate(ctx context.Context, conn net.Conn, t *envoysim.DownstreamTLS) (*tls.Conn, error) {
	cfg := &tls.Config{MinVersion: t.MinVersion, MaxVersion: t.MaxVersion, NextProtos: t.ALPN, CurvePreferences: t.Curves}
	for _, name := range t.Certificates {
		cert, err := p.certificate(name)
		if err != nil {
			return nil, err
		}
		cfg.Certificates = append(cfg.Certificates, cert)
	}
	switch t.ClientCertificate {
	case "required":
		cfg.ClientAuth = tls.RequireAnyClientCert
	case "optional":
		cfg.ClientAuth = tls.RequestClientCert
	}
	cfg.VerifyPeerCertificate = func(raw [][]byte, _ [][]*x509.Certificate) error { return t.VerifyClient(raw) }
	tc := tls.Server(conn, cfg)
	hctx, cancel := context.WithTimeout(ctx, handshakeTimeout)
	defer cancel()
	if err := tc.HandshakeContext(hctx); err != nil {
		return nil, err
	}
	return tc, nil
}

// certificate is an SDS secret's certificate and key.
func (p *proxy) certificate(name string) (tls.Certificate, error) {
	s := p.envoy.Secret(name)
	if s == nil {
		return tls.Certificate{}, fmt.Errorf("secret %s is not served", name)
	}
	return tls.X509KeyPair(s.GetTlsCertificate().GetCertificateChain().GetInlineBytes(), s.GetTlsCertificate().GetPrivateKey().GetInlineBytes())
}

func (p *proxy) logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "simulated Envoy %s: %s\n", p.envoy.Node().GetId(), fmt.Sprintf(format, args...))
}

// recorder reads from r, keeps what it read, and writes nothing (the
// inspector's aborted handshake must not answer the client).
type recorder struct {
	net.Conn
	r    io.Reader
	read bytes.Buffer
}

func (r *recorder) Read(b []byte) (int, error) {
	n, err := r.r.Read(b)
	r.read.Write(b[:n])
	return n, err
}

func (r *recorder) Write(b []byte) (int, error) { return len(b), nil }

// replayConn reads r (what was peeked, then the connection).
type replayConn struct {
	net.Conn
	mu sync.Mutex
	r  io.Reader
}

func (c *replayConn) Read(b []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.r.Read(b)
}
