package dataplane

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/net/http2"

	"isobar.dev/controller/pkg/envoysim"
)

// forward is Envoy's router for a request it sends upstream: the route's
// mirrors get their copies, and each try goes to an endpoint of the
// cluster over a real connection, with the cluster's protocol and TLS,
// under the route's timeout and retry policy in wall-clock time.
func (p *proxy) forward(w http.ResponseWriter, r *http.Request, in envoysim.Request, sim *envoysim.Simulator, a *envoysim.Answer, body []byte) {
	b := a.Upstream
	if unavailable(w, r, a) {
		return
	}
	rt := a.Retries()
	p.mirror(sim, a.Mirrors, rt.Timeout, body)
	done, ok := p.limits.request(b)
	if !ok {
		localReply(w, r, a.Reply(overflow))
		return
	}
	defer done()
	retrying := func() {}
	defer func() { retrying() }()
	ctx := r.Context()
	limit, late := rt.Deadline()
	if limit > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, limit)
		defer cancel()
	}
	for n := 0; ; n++ {
		try, cancel := ctx, context.CancelFunc(func() {})
		if rt.PerTry > 0 {
			try, cancel = context.WithTimeout(ctx, rt.PerTry)
		}
		endpoint := p.health.pick(try, b, rand.Uint64())
		if endpoint == "" {
			cancel()
			localReply(w, r, a.Reply(&envoysim.Response{Status: http.StatusServiceUnavailable, Body: "no healthy upstream"}))
			return
		}
		disconnect, ok := p.limits.connect(try, b, endpoint)
		if !ok {
			cancel()
			if ctx.Err() != nil {
				localReply(w, r, a.Reply(outcome(late)))
			} else {
				localReply(w, r, a.Reply(overflow))
			}
			return
		}
		resp, err := p.attempt(try, sim, upstreamOf(b), endpoint, body)
		if err != nil {
			disconnect()
		} else {
			resp.Body = &closing{ReadCloser: resp.Body, close: disconnect}
		}
		// A retry counts against the cluster's retries while it goes.
		retrying()
		retrying = func() {}
		var at envoysim.Attempt
		timedOut := false
		switch {
		case err == nil:
			at.Status, at.GRPCStatus = resp.StatusCode, resp.Header.Get("Grpc-Status")
		case ctx.Err() != nil:
			cancel()
			localReply(w, r, a.Reply(outcome(late)))
			return
		case try.Err() != nil:
			timedOut = true
		default:
			var op *net.OpError
			at.Reset, at.Refused = true, errors.As(err, &op) && op.Op == "dial"
		}
		if n < rt.Max && rt.Retriable(at, timedOut) && p.limits.retry(b, &retrying) {
			if resp != nil {
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
			cancel()
			select {
			case <-time.After(rt.BackOff(n + 1)):
				continue
			case <-ctx.Done():
				localReply(w, r, a.Reply(outcome(late)))
				return
			}
		}
		switch {
		case timedOut:
			localReply(w, r, a.Reply(outcome(envoysim.TimedOut)))
		case at.Reset:
			localReply(w, r, a.Reply(outcome(envoysim.WasReset)))
		default:
			if next, na, ok := follow(sim, in, a, resp); ok {
				cancel()
				if next.Method != in.Method {
					body = nil // a 303 becomes a GET
				}
				p.answer(w, r, next, sim, na, body)
				return
			}
			p.respond(w, r, in, sim, endpoint, resp)
		}
		cancel()
		return
	}
}

// unavailable answers for Envoy when a route's backend cannot be tried:
// its cluster does not exist (the route's cluster_not_found_response_code)
// or has no endpoint (503, "no healthy upstream").
func unavailable(w http.ResponseWriter, r *http.Request, a *envoysim.Answer) bool {
	b := a.Upstream
	switch {
	case b == nil:
		localReply(w, r, a.Reply(&envoysim.Response{Status: http.StatusInternalServerError, Body: "simulated Envoy: no upstream"}))
	case b.Status != 0 || len(b.Endpoints) == 0:
		localReply(w, r, a.Reply(&envoysim.Response{Status: max(b.Status, http.StatusServiceUnavailable), Body: "no healthy upstream"}))
	default:
		return false
	}
	return true
}

func outcome(o envoysim.Outcome) *envoysim.Response {
	return &envoysim.Response{Status: o.Status, Body: o.Body}
}

// target is where a request goes: a cluster's protocol and TLS, and the
// request as the cluster's endpoints receive it.
type target struct {
	cluster string
	http2   bool
	tls     *envoysim.UpstreamTLS
	request *envoysim.HTTPRequest
}

func upstreamOf(b *envoysim.Backend) target {
	return target{cluster: b.Cluster, http2: b.HTTP2, tls: b.TLS, request: b.Request}
}

// mirror sends each mirror its copy of the request, for its fraction of
// requests, and forgets it: Envoy does not wait for a mirror's answer.
func (p *proxy) mirror(sim *envoysim.Simulator, mirrors []envoysim.Mirror, timeout time.Duration, body []byte) {
	for _, m := range mirrors {
		if len(m.Endpoints) == 0 || rand.Float64() >= m.Fraction {
			continue
		}
		t := target{cluster: m.Cluster, http2: m.HTTP2, tls: m.TLS, request: m.Request}
		endpoint := m.Endpoints[rand.IntN(len(m.Endpoints))]
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), cmpOr(timeout, 15*time.Second))
			defer cancel()
			if resp, err := p.attempt(ctx, sim, t, endpoint, body); err == nil {
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		}()
	}
}

func cmpOr(d, otherwise time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return otherwise
}

// attempt sends the request to one endpoint over a connection of its own,
// speaking the cluster's protocol: HTTP/1.1, or HTTP/2 (h2c in plain text)
// when the cluster asks for it; TLS as the cluster's context says.
func (p *proxy) attempt(ctx context.Context, sim *envoysim.Simulator, t target, endpoint string, body []byte) (*http.Response, error) {
	rq := t.request
	u, err := url.ParseRequestURI(rq.Path)
	if err != nil {
		u = &url.URL{Opaque: rq.Path}
	}
	u.Scheme, u.Host = "http", endpoint
	if t.tls != nil {
		u.Scheme = "https"
	}
	req := (&http.Request{Method: rq.Method, URL: u, Host: rq.Authority, Header: http.Header{},
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1}).WithContext(ctx)
	for _, h := range rq.Headers {
		k := http.CanonicalHeaderKey(h.Name)
		switch k {
		case "Content-Length", "Host", "Connection", "Upgrade", "Transfer-Encoding", "Keep-Alive":
			continue
		}
		req.Header[k] = append(req.Header[k], h.Value)
	}
	if _, ok := req.Header["User-Agent"]; !ok {
		req.Header["User-Agent"] = []string{""} // none, rather than Go's
	}
	if len(body) > 0 {
		req.ContentLength = int64(len(body))
		req.Body = io.NopCloser(bytes.NewReader(body))
		req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	}
	dial := func(ctx context.Context, _, addr string) (net.Conn, error) {
		c, err := p.upstream(ctx, "tcp", addr)
		if err != nil || t.tls == nil {
			return c, err
		}
		// Without ALPN of its own, Envoy offers its pool's protocol.
		alpn := t.tls.ALPN
		if len(alpn) == 0 {
			alpn = []string{"http/1.1"}
			if t.http2 {
				alpn = []string{"h2"}
			}
		}
		return p.upstreamTLS(ctx, c, sim, t.cluster, t.tls, alpn)
	}
	var rt interface {
		http.RoundTripper
		CloseIdleConnections()
	}
	if t.http2 {
		// x/net's Transport speaks HTTP/2 over whatever dial returns
		// (TLS already done, or cleartext for h2c) for an http:// URL,
		// as Envoy's pool does; net/http's Protocols, which deprecates
		// these fields, would do the TLS itself.
		rt = &http2.Transport{AllowHTTP: true, DisableCompression: true, //nolint:staticcheck // see above
			//nolint:staticcheck // see above
			DialTLSContext: func(ctx context.Context, network, addr string, _ *tls.Config) (net.Conn, error) {
				return dial(ctx, network, addr)
			}}
	} else {
		ht := &http.Transport{DialContext: dial, DisableCompression: true, DisableKeepAlives: true,
			TLSNextProto: map[string]func(string, *tls.Conn) http.RoundTripper{}}
		if t.tls != nil {
			ht.DialTLSContext = dial
		}
		rt = ht
	}
	resp, err := rt.RoundTrip(req)
	if err != nil {
		rt.CloseIdleConnections()
		return nil, err
	}
	resp.Body = &closing{ReadCloser: resp.Body, close: rt.CloseIdleConnections}
	return resp, nil
}

// closing closes the transport's connections with the body.
type closing struct {
	io.ReadCloser
	close func()
}

func (c *closing) Close() error {
	err := c.ReadCloser.Close()
	c.close()
	return err
}

// upstreamTLS is Envoy's TLS handshake with a backend: the cluster's SNI,
// versions and ALPN, its client certificate whatever the backend asks for,
// and the backend's certificate verified as the cluster's validation
// context says (envoysim.VerifyUpstream).
func (p *proxy) upstreamTLS(ctx context.Context, c net.Conn, sim *envoysim.Simulator, cluster string, t *envoysim.UpstreamTLS, alpn []string) (net.Conn, error) {
	cfg := &tls.Config{
		ServerName: t.SNI, NextProtos: alpn, MinVersion: t.MinVersion, MaxVersion: t.MaxVersion,
		// VerifyConnection verifies instead, as Envoy does.
		InsecureSkipVerify: true,
		VerifyConnection: func(cs tls.ConnectionState) error {
			return sim.VerifyUpstream(cluster, cs.PeerCertificates)
		},
	}
	if t.ClientCertificate != "" {
		cert, err := p.certificate(t.ClientCertificate)
		if err != nil {
			c.Close()
			return nil, err
		}
		cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &cert, nil }
	}
	tc := tls.Client(c, cfg)
	if err := tc.HandshakeContext(ctx); err != nil {
		c.Close()
		return nil, err
	}
	return tc, nil
}

// hopByHop are response headers that describe the backend's connection,
// which Envoy does not pass on.
var hopByHop = []string{"Connection", "Keep-Alive", "Proxy-Connection", "Transfer-Encoding", "Upgrade", "Content-Length"}

// respond gives the client the backend's answer as Envoy passes it on:
// the response headers as the route's and cluster's response header
// changes, the gRPC-Web filter and the compressor leave them (envoysim,
// told what the backend answered), the body as it streams (compressed,
// or turned into gRPC-Web, when envoysim says so), and the trailers. A
// session the request did not name endpoint in is updated to it.
func (p *proxy) respond(w http.ResponseWriter, r *http.Request, in envoysim.Request, sim *envoysim.Simulator, endpoint string, resp *http.Response) {
	defer resp.Body.Close()
	for _, h := range hopByHop {
		resp.Header.Del(h)
	}
	headers := headerList(resp.Header)
	// The compressor reads how the body is framed.
	switch {
	case resp.ContentLength >= 0:
		headers = append(headers, envoysim.Header{Name: "content-length", Value: strconv.FormatInt(resp.ContentLength, 10)})
	case slices.Contains(resp.TransferEncoding, "chunked"):
		headers = append(headers, envoysim.Header{Name: "transfer-encoding", Value: "chunked"})
	}
	in.BackendResponseHeaders = headers
	// The same seed picks the same backend, whose changes apply; the
	// request was counted (a rate limit's token) the first time.
	in.Replay = true
	encoding, grpcWeb := "", (*envoysim.GRPCWeb)(nil)
	if a, err := sim.Simulate(in); err == nil && a.Upstream != nil {
		headers, encoding, grpcWeb = a.Upstream.ClientHeaders(endpoint), a.Upstream.Encoding, a.GRPCWeb
	}
	length := ""
	for _, h := range headers {
		switch h.Name {
		case "transfer-encoding":
			// The server frames the body itself.
		case "content-length":
			length = h.Value
		default:
			w.Header().Add(h.Name, h.Value)
		}
	}
	if _, ok := w.Header()["Content-Type"]; !ok {
		w.Header()["Content-Type"] = nil // no sniffing
	}
	body := io.Reader(resp.Body)
	if grpcWeb != nil {
		if !isGRPCResponse(resp) {
			nonGRPCToGRPCWeb(w, resp)
			return
		}
		// The trailers go in the body's last frame.
		web := grpcWebBody(resp, grpcWeb)
		defer web.Close()
		body = web
	} else if length != "" {
		w.Header().Set("Content-Length", length)
	}
	w.WriteHeader(resp.StatusCode)
	out, flush := flushWriter(nopFlusher{w}), http.NewResponseController(w).Flush
	if encoding != "" {
		enc, err := newEncoder(encoding, w)
		if err != nil {
			return
		}
		defer enc.Close()
		out = enc
	}
	buf := make([]byte, 32<<10)
	for {
		n, err := body.Read(buf)
		if n > 0 {
			if _, werr := out.Write(buf[:n]); werr != nil {
				return
			}
			_ = out.Flush()
			_ = flush()
		}
		if err != nil {
			break
		}
	}
	if encoding != "" {
		_ = out.Close()
	}
	if grpcWeb != nil {
		return
	}
	// Only now: the transport fills (or makes) the trailer map once the
	// body has been read to its end.
	for k, vv := range resp.Trailer {
		for _, v := range vv {
			w.Header().Add(http.TrailerPrefix+k, v)
		}
	}
}

// nopFlusher writes as it is; the response controller flushes.
type nopFlusher struct{ io.Writer }

func (nopFlusher) Flush() error { return nil }
func (nopFlusher) Close() error { return nil }

// headerList is a header map as envoysim's header lines, names lower case.
func headerList(h http.Header) []envoysim.Header {
	var out []envoysim.Header
	for k, vv := range h {
		for _, v := range vv {
			out = append(out, envoysim.Header{Name: strings.ToLower(k), Value: v})
		}
	}
	return out
}

// follow is Envoy following a backend's redirect itself (the route's
// internal redirect policy): the request it routes to the Location, and
// that request's answer. The redirect's body is discarded.
func follow(sim *envoysim.Simulator, in envoysim.Request, a *envoysim.Answer, resp *http.Response) (envoysim.Request, *envoysim.Answer, bool) {
	if a.InternalRedirect == nil || resp.Header.Get("Location") == "" {
		return in, nil, false
	}
	next, na, ok, err := sim.Follow(in, a, resp.StatusCode, resp.Header.Get("Location"))
	if err != nil || !ok {
		return in, nil, false
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return next, na, true
}
