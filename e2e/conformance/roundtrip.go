package conformance

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/gateway-api/conformance/utils/roundtripper"

	"isobar.dev/controller/pkg/envoysim"
	"isobar.dev/e2e/dataplane"
)

// roundTripper sends the suite's HTTP requests to the simulated Envoy of
// the Gateway that owns the address, and answers as the suite's echo
// backend would from the request Envoy forwards. Every decision (listener,
// certificate, route, filters, redirect, direct response, backend) comes
// from the xDS that Envoy was sent, through envoysim.
type roundTripper struct {
	fleet *fleet
}

var _ roundtripper.RoundTripper = (*roundTripper)(nil)

// maxRedirects is how many redirects are followed, as net/http's client.
const maxRedirects = 10

func (rt *roundTripper) CaptureRoundTrip(r roundtripper.Request) (*roundtripper.CapturedRequest, *roundtripper.CapturedResponse, error) {
	for range maxRedirects {
		req, res, err := rt.roundTrip(r)
		if err != nil || r.UnfollowRedirect || res.RedirectRequest == nil {
			return req, res, err
		}
		loc, err := url.Parse(res.Headers["Location"][0])
		if err != nil {
			return nil, nil, err
		}
		next := r.URL.ResolveReference(loc)
		r.URL, r.Host = *next, ""
	}
	return nil, nil, errors.New("stopped after 10 redirects")
}

func (rt *roundTripper) roundTrip(r roundtripper.Request) (*roundtripper.CapturedRequest, *roundtripper.CapturedResponse, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	envoy, port, err := rt.fleet.envoyAt(ctx, r.URL.Hostname(), r.URL.Port(), r.URL.Scheme)
	if err != nil {
		return nil, nil, err
	}
	sim, err := envoy.Simulator()
	if err != nil {
		return nil, nil, err
	}
	method := r.Method
	if method == "" {
		method = http.MethodGet
	}
	host := r.Host
	if host == "" {
		host = r.URL.Host
	}
	in := envoysim.Request{
		Port: port, Method: method, Scheme: r.URL.Scheme, Authority: host, Path: r.URL.RequestURI(),
		Seed: rand.Uint64(),
	}
	for name, values := range r.Headers {
		// The suite's client sets one value per header.
		in.Headers = append(in.Headers, envoysim.Header{Name: name, Value: values[0]})
	}
	if r.Body != "" {
		in.Headers = append(in.Headers, envoysim.Header{Name: "Content-Length", Value: strconv.Itoa(len(r.Body))})
	}
	res := &roundtripper.CapturedResponse{Protocol: "HTTP/1.1", Headers: map[string][]string{}}
	if r.URL.Scheme == "https" {
		in.TLS, in.SNI, in.ALPN = true, r.ServerName, []string{"h2", "http/1.1"}
		if in.SNI == "" {
			in.SNI = stripPort(host)
		}
		// The client's certificate, asked for only when Envoy asks, as
		// crypto/tls calls GetClientCertificate.
		if hook := r.GetClientCertificateHook; hook != nil {
			in.ClientCertificate = func() [][]byte {
				cert, err := hook(&tls.CertificateRequestInfo{})
				if err != nil || cert == nil {
					return nil
				}
				return cert.Certificate
			}
		}
	}
	a, err := sim.Simulate(in)
	if err != nil {
		return nil, nil, err
	}
	if in.TLS && a.Filter == tcpProxyFilter && len(a.DownstreamTLS) == 0 {
		return rt.passthrough(ctx, a, in, r, res)
	}
	if in.TLS {
		if res.PeerCertificates, err = verifyServer(envoy, a.DownstreamTLS, in.SNI, r); err != nil {
			return nil, nil, err
		}
	}
	if a.Response != nil {
		return respond(method, a.Response, res)
	}
	b := a.Upstream
	if b == nil {
		return nil, nil, fmt.Errorf("envoysim forwarded %s %s nowhere", method, r.URL.String())
	}
	if b.Status != 0 || len(b.Endpoints) == 0 {
		return respond(method, &envoysim.Response{Status: max(b.Status, http.StatusServiceUnavailable), Body: "no healthy upstream"}, res)
	}
	if err := rt.mirror(ctx, envoy.Node().GetId(), a.Mirrors, b.Request); err != nil {
		return nil, nil, err
	}
	// Each try goes to an endpoint of its own, which answers as the
	// suite's echo server would; Envoy's timeouts and retries decide what
	// the client gets.
	var pod *corev1.Pod
	var podErr error
	out := a.Play(func(int) envoysim.Attempt {
		if pod, podErr = rt.fleet.podAt(ctx, b.Pick(rand.Uint64())); podErr != nil {
			return envoysim.Attempt{Reset: true}
		}
		if b.TLS != nil && rt.upstreamTLS(ctx, sim, b.Cluster, pod) != nil {
			// Envoy's handshake fails: it resets the stream.
			return envoysim.Attempt{Reset: true}
		}
		return rt.fleet.backends.attempt(pod, envoy.Node().GetId(), b.Request)
	})
	if podErr != nil {
		return nil, nil, podErr
	}
	if out.FromEnvoy {
		return respond(method, &envoysim.Response{Status: out.Status, Body: out.Body}, res)
	}
	if out.Status != http.StatusOK {
		return respond(method, &envoysim.Response{Status: out.Status}, res)
	}
	echoed := echo(b.Request, pod, b.HTTP2)
	if b.TLS != nil {
		// What the backend's TLS server saw of Envoy's handshake.
		echoed.request.TLS = roundtripper.TLS{ServerName: b.TLS.SNI, Version: "TLSv1.3", PeerCertificates: peerCertificates(b.TLS.ClientCertificatePEM)}
	}
	// A second pass gives the client the echo's response headers as
	// Envoy's response filters change them.
	in.BackendResponseHeaders = echoed.responseHeaders
	if a, err = sim.Simulate(in); err != nil {
		return nil, nil, err
	}
	res.StatusCode = http.StatusOK
	addHeaders(res, a.Upstream.ResponseHeaders)
	body, err := json.Marshal(echoed.request)
	if err != nil {
		return nil, nil, err
	}
	res.ContentLength = int64(len(body))
	return echoed.request, res, nil
}

// mirror has the echo backends that receive a copy of the request log it,
// as the suite's echo server does.
func (rt *roundTripper) mirror(ctx context.Context, from string, mirrors []envoysim.Mirror, r *envoysim.HTTPRequest) error {
	for _, m := range mirrors {
		if len(m.Endpoints) == 0 || rand.Float64() >= m.Fraction {
			continue
		}
		pod, err := rt.fleet.podAt(ctx, m.Endpoints[rand.IntN(len(m.Endpoints))])
		if err != nil {
			return err
		}
		rt.fleet.backends.attempt(pod, from, r)
	}
	return nil
}

// upstreamTLS checks the certificate the backend Pod serves as Envoy would
// for the cluster.
func (rt *roundTripper) upstreamTLS(ctx context.Context, sim *envoysim.Simulator, cluster string, pod *corev1.Pod) error {
	cert, err := rt.fleet.backendCertificate(ctx, pod)
	if err != nil {
		return err
	}
	var chain []*x509.Certificate
	for _, der := range cert.Certificate {
		c, err := x509.ParseCertificate(der)
		if err != nil {
			return err
		}
		chain = append(chain, c)
	}
	return sim.VerifyUpstream(cluster, chain)
}

// tcpProxyFilter is the network filter of TLS passthrough (and TCP).
const tcpProxyFilter = "envoy.filters.network.tcp_proxy"

// passthrough is an HTTPS request Envoy passes through by SNI: the echo
// backend the connection reaches terminates TLS with the certificate its
// Pod mounts and answers the request as it was sent.
func (rt *roundTripper) passthrough(ctx context.Context, a *envoysim.Answer, in envoysim.Request, r roundtripper.Request, res *roundtripper.CapturedResponse) (*roundtripper.CapturedRequest, *roundtripper.CapturedResponse, error) {
	b := a.Upstream
	if b == nil || b.Status != 0 || len(b.Endpoints) == 0 {
		return nil, nil, fmt.Errorf("read tcp %s: connection reset by peer (Envoy has no upstream for SNI %q)", r.URL.Host, in.SNI)
	}
	pod, err := rt.fleet.podAt(ctx, b.Pick(rand.Uint64()))
	if err != nil {
		return nil, nil, err
	}
	cert, err := rt.fleet.backendCertificate(ctx, pod)
	if err != nil {
		return nil, nil, err
	}
	if res.PeerCertificates, err = verifyChain(cert, in.SNI, r); err != nil {
		return nil, nil, err
	}
	req := &envoysim.HTTPRequest{Method: in.Method, Scheme: "https", Authority: in.Authority, Path: in.Path, Headers: in.Headers}
	if at := rt.fleet.backends.attempt(pod, "", req); at.Status != http.StatusOK || at.Reset {
		return respond(in.Method, &envoysim.Response{Status: at.Status}, res)
	}
	echoed := echo(req, pod, false)
	res.StatusCode = http.StatusOK
	addHeaders(res, echoed.responseHeaders)
	return echoed.request, res, nil
}

// respond is an answer Envoy gives itself.
func respond(method string, r *envoysim.Response, res *roundtripper.CapturedResponse) (*roundtripper.CapturedRequest, *roundtripper.CapturedResponse, error) {
	res.StatusCode = r.Status
	addHeaders(res, r.Headers)
	res.ContentLength = int64(len(r.Body))
	if roundtripper.IsRedirect(r.Status) {
		loc, ok := res.Headers["Location"]
		if !ok {
			return nil, nil, fmt.Errorf("a %d redirect without a Location", r.Status)
		}
		u, err := url.Parse(loc[0])
		if err != nil {
			return nil, nil, err
		}
		res.RedirectRequest = &roundtripper.RedirectRequest{Scheme: u.Scheme, Host: u.Hostname(), Port: u.Port(), Path: u.Path}
	}
	// The suite's client assumes the request was made as asked when the
	// answer is not the echo's.
	return &roundtripper.CapturedRequest{Method: method}, res, nil
}

// echoed is the suite's echo backend's answer.
type echoed struct {
	request         *roundtripper.CapturedRequest
	responseHeaders []envoysim.Header
}

// echo answers as the suite's echo server (conformance/echo-basic) does:
// the request as it arrived, the Pod that received it, and the response
// headers X-Echo-Set-Header asks for.
func echo(r *envoysim.HTTPRequest, pod *corev1.Pod, http2 bool) echoed {
	out := &roundtripper.CapturedRequest{
		Path: r.Path, Host: r.Authority, Method: r.Method, Protocol: "HTTP/1.1",
		Headers: map[string][]string{}, Namespace: pod.Namespace, Pod: pod.Name,
	}
	if http2 {
		out.Protocol = "HTTP/2.0"
	}
	var set []string
	for _, h := range r.Headers {
		name := http.CanonicalHeaderKey(h.Name)
		if name == "Host" || strings.HasPrefix(h.Name, ":") {
			continue
		}
		out.Headers[name] = append(out.Headers[name], h.Value)
		if name == "X-Echo-Set-Header" {
			set = append(set, h.Value)
		}
	}
	headers := []envoysim.Header{{Name: "content-type", Value: "application/json"}, {Name: "x-content-type-options", Value: "nosniff"}}
	for _, list := range set {
		for _, kv := range strings.Split(list, ",") {
			name, value, ok := strings.Cut(strings.TrimSpace(kv), ":")
			if ok {
				headers = append(headers, envoysim.Header{Name: name, Value: strings.TrimSpace(value)})
			}
		}
	}
	return echoed{request: out, responseHeaders: headers}
}

// verifyServer checks the certificate Envoy presents for the SNI as the
// suite's client would: against the CA it was given and the server name.
func verifyServer(e *dataplane.Envoy, secrets []string, sni string, r roundtripper.Request) ([]*x509.Certificate, error) {
	if len(secrets) == 0 {
		return nil, fmt.Errorf("tls: Envoy presents no certificate for %q", sni)
	}
	cert, err := serving(e, secrets)
	if err != nil {
		return nil, fmt.Errorf("tls: %w", err)
	}
	return verifyChain(cert, sni, r)
}

// verifyChain checks a server's certificate as the suite's client does,
// against the request's ServerCertificate (when it has one).
func verifyChain(cert tls.Certificate, sni string, r roundtripper.Request) ([]*x509.Certificate, error) {
	var certs []*x509.Certificate
	for _, der := range cert.Certificate {
		c, err := x509.ParseCertificate(der)
		if err != nil {
			return nil, err
		}
		certs = append(certs, c)
	}
	if len(r.ServerCertificate) == 0 {
		return certs, nil
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(r.ServerCertificate) {
		return nil, errors.New("tls: the request's server certificate is not PEM")
	}
	name := r.ServerName
	if name == "" {
		name = sni
	}
	inter := x509.NewCertPool()
	for _, c := range certs[1:] {
		inter.AddCert(c)
	}
	if _, err := certs[0].Verify(x509.VerifyOptions{Roots: roots, Intermediates: inter, DNSName: name}); err != nil {
		return nil, fmt.Errorf("tls: failed to verify certificate: %w", err)
	}
	return certs, nil
}

func stripPort(host string) string {
	if h, _, err := net.SplitHostPort(host); err == nil {
		return h
	}
	return host
}

// envoyAt finds the simulated Envoy behind a Gateway's address and port:
// the Envoy Service with that address, one of its Pods whose Envoy has
// synced, and the container port the Service's port targets.
func (f *fleet) envoyAt(ctx context.Context, address, portText, scheme string) (*dataplane.Envoy, uint32, error) {
	if portText == "" {
		portText = "80"
		if scheme == "https" {
			portText = "443"
		}
	}
	port, err := strconv.Atoi(portText)
	if err != nil {
		return nil, 0, err
	}
	var services corev1.ServiceList
	if err := f.env.Client.List(ctx, &services); err != nil {
		return nil, 0, err
	}
	for _, s := range services.Items {
		if s.Spec.ClusterIP != address && !hasIngress(s, address) {
			continue
		}
		var target int32
		for _, p := range s.Spec.Ports {
			if int(p.Port) == port {
				target = p.TargetPort.IntVal
			}
		}
		if target == 0 {
			return nil, 0, fmt.Errorf("dial tcp %s:%d: connect: connection refused (Service %s/%s has no such port)", address, port, s.Namespace, s.Name)
		}
		var pods corev1.PodList
		if err := f.env.Client.List(ctx, &pods, client.InNamespace(s.Namespace), client.MatchingLabelsSelector{Selector: labels.SelectorFromSet(s.Spec.Selector)}); err != nil {
			return nil, 0, err
		}
		for _, p := range pods.Items {
			if e := f.envoy(types.NamespacedName{Namespace: p.Namespace, Name: p.Name}); e != nil {
				if ok, _ := e.Synced(); ok {
					return e, uint32(target), nil
				}
			}
		}
		return nil, 0, fmt.Errorf("dial tcp %s:%d: connect: connection refused (no Envoy of Service %s/%s has its configuration)", address, port, s.Namespace, s.Name)
	}
	return nil, 0, fmt.Errorf("dial tcp %s:%d: no route to host", address, port)
}

func hasIngress(s corev1.Service, address string) bool {
	for _, in := range s.Status.LoadBalancer.Ingress {
		if in.IP == address || in.Hostname == address {
			return true
		}
	}
	return false
}

// podAt is the Pod behind an endpoint address:port.
func (f *fleet) podAt(ctx context.Context, endpoint string) (*corev1.Pod, error) {
	ip := stripPort(endpoint)
	var pods corev1.PodList
	if err := f.env.Client.List(ctx, &pods); err != nil {
		return nil, err
	}
	for i, p := range pods.Items {
		if p.Status.PodIP == ip {
			return &pods.Items[i], nil
		}
	}
	return nil, fmt.Errorf("no Pod has the address %s", ip)
}

// addHeaders gives the client's response the headers, as net/http keys them.
func addHeaders(res *roundtripper.CapturedResponse, hs []envoysim.Header) {
	for _, h := range hs {
		k := http.CanonicalHeaderKey(h.Name)
		res.Headers[k] = append(res.Headers[k], h.Value)
	}
}

// peerCertificates are the client certificates a TLS backend saw, PEM
// encoded one by one, as echo-basic reports them.
func peerCertificates(chain []byte) []string {
	var out []string
	for rest := chain; ; {
		var b *pem.Block
		if b, rest = pem.Decode(rest); b == nil {
			return out
		}
		out = append(out, string(pem.EncodeToMemory(&pem.Block{Type: b.Type, Bytes: b.Bytes})))
	}
}
