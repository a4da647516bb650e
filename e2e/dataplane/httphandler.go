package dataplane

import (
	"bufio"
	"encoding/base64"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc/codes"

	"isobar.dev/controller/pkg/envoysim"
)

// maxRequestBody is how much of a request body the simulated Envoy
// buffers (for retries and mirrors, as Envoy's router buffers it).
const maxRequestBody = 16 << 20

// httpHandler is the HTTP connection manager and router of a simulated
// Envoy: envoysim decides what happens to each request, and the handler
// does it.
type httpHandler struct {
	proxy *proxy
}

func (h *httpHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p := h.proxy
	d, _ := r.Context().Value(connInfoKey{}).(*downstream)
	if d == nil {
		http.Error(w, "simulated Envoy: no connection information", http.StatusInternalServerError)
		return
	}
	sim, err := p.envoy.Simulator()
	if err != nil {
		localReply(w, r, &envoysim.Response{Status: http.StatusServiceUnavailable, Body: "simulated Envoy: " + err.Error()})
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxRequestBody+1))
	if err != nil {
		return // the client went away
	}
	if len(body) > maxRequestBody {
		localReply(w, r, &envoysim.Response{Status: http.StatusRequestEntityTooLarge, Body: "Payload Too Large"})
		return
	}
	in := d.request()
	in.Method, in.Authority, in.Path = r.Method, r.Host, r.RequestURI
	in.StartTime = time.Now()
	p.envoy.mu.Lock()
	p.envoy.lastClientAddr = in.ClientAddress
	p.envoy.mu.Unlock()
	for name, values := range r.Header {
		for _, v := range values {
			in.Headers = append(in.Headers, envoysim.Header{Name: name, Value: v})
		}
	}
	if len(body) > 0 && r.Header.Get("Content-Length") == "" {
		in.Headers = append(in.Headers, envoysim.Header{Name: "content-length", Value: strconv.Itoa(len(body))})
	}
	a, err := sim.Simulate(in)
	if err != nil {
		p.logf("%s %s%s: %v", r.Method, r.Host, r.RequestURI, err)
		localReply(w, r, &envoysim.Response{Status: http.StatusServiceUnavailable, Body: "simulated Envoy: " + err.Error()})
		return
	}
	if g := a.GRPCWeb; g != nil && g.Text {
		// The gRPC-Web filter decodes a text call's body for the
		// backend; padding is mandatory.
		decoded, err := base64.StdEncoding.DecodeString(string(body))
		if err != nil {
			localReply(w, r, a.Reply(&envoysim.Response{Status: http.StatusBadRequest, Body: "Bad gRPC-web request, invalid base64 data."}))
			return
		}
		body = decoded
	}
	s := startSpan(r, a)
	if s == nil {
		p.answer(w, r, in, sim, a, body)
		return
	}
	rec := &statusWriter{ResponseWriter: w, status: http.StatusOK}
	p.answer(rec, r, in, sim, a, body)
	upstream := ""
	if a.Upstream != nil && a.Response == nil {
		upstream = a.Upstream.Cluster
	}
	p.finish(s, sim, r, rec.status, upstream)
}

// statusWriter records the status of the answer a traced request gets.
type statusWriter struct {
	http.ResponseWriter
	status int
	wrote  bool
}

func (w *statusWriter) WriteHeader(code int) {
	if !w.wrote {
		w.status, w.wrote = code, true
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	w.wrote = true
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// Hijack hands an upgraded connection over, as the connection's writer
// does.
func (w *statusWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	return http.NewResponseController(w.ResponseWriter).Hijack()
}

// answer does what a simulated request's answer says, once its token is
// verified and the route's authorization server, if it has one, allows
// it: Envoy answers itself, upgrades the connection, or forwards the
// request.
func (p *proxy) answer(w http.ResponseWriter, r *http.Request, in envoysim.Request, sim *envoysim.Simulator, a *envoysim.Answer, body []byte) {
	if c := a.JWT; c != nil {
		denied := c.Verify(time.Now(), func() ([]byte, error) {
			doc, err := p.jwks(r.Context(), sim, c)
			if err != nil {
				p.logf("JWKS %s: %v", c.URI, err)
			}
			return doc, err
		})
		if denied != nil {
			localReply(w, r, denied)
			return
		}
	}
	if z := a.Authorization; z != nil {
		v := p.authorize(r.Context(), sim, z, body)
		if v.Denied != nil {
			localReply(w, r, v.Denied)
			return
		}
		for i := range a.Backends {
			withHeaders(a.Backends[i].Request, v.Upstream)
		}
	}
	if c := a.RateLimit; c != nil {
		v := p.rateLimit(r.Context(), sim, c)
		if v.Limited != nil {
			localReply(w, r, v.Limited)
			return
		}
		// The filter adds them to whatever answer the request gets.
		for _, h := range v.Response {
			w.Header().Add(h.Name, h.Value)
		}
	}
	switch {
	case a.Response != nil:
		localReply(w, r, a.Response)
	case upgradeType(r) != "":
		// One the route does not allow is the simulator's 403 above.
		p.upgrade(w, r, sim, a)
	default:
		p.forward(w, r, in, sim, a, body)
	}
}

// upgradeType is the protocol an HTTP/1.1 request asks to upgrade to, or
// "".
func upgradeType(r *http.Request) string {
	for _, token := range strings.Split(r.Header.Get("Connection"), ",") {
		if strings.EqualFold(strings.TrimSpace(token), "upgrade") {
			return strings.ToLower(r.Header.Get("Upgrade"))
		}
	}
	return ""
}

// isGRPC is whether Envoy treats a request as gRPC, and answers it in
// gRPC's terms when it answers itself.
func isGRPC(r *http.Request) bool {
	return envoysim.IsGRPC(r.Header.Get("Content-Type"))
}

// localReply is an answer Envoy gives itself. A gRPC request gets it as
// gRPC's trailers-only response: HTTP 200 with the gRPC status the HTTP
// status maps to (Grpc::Utility::httpToGrpcStatus) and the body as the
// message.
func localReply(w http.ResponseWriter, r *http.Request, res *envoysim.Response) {
	if isGRPC(r) {
		w.Header().Set("Content-Type", "application/grpc")
		code := int(grpcCode(res.Status))
		if res.GRPCStatus != 0 {
			code = res.GRPCStatus
		}
		w.Header().Set("Grpc-Status", strconv.Itoa(code))
		if res.Body != "" {
			w.Header().Set("Grpc-Message", url.PathEscape(res.Body))
		}
		w.WriteHeader(http.StatusOK)
		return
	}
	for _, h := range res.Headers {
		w.Header().Add(h.Name, h.Value)
	}
	if res.Encoding != "" {
		// The compressor took Content-Length away: the body is sent
		// chunked, compressed.
		w.WriteHeader(res.Status)
		enc, err := newEncoder(res.Encoding, w)
		if err != nil {
			return
		}
		_, _ = io.WriteString(enc, res.Body)
		_ = enc.Close()
		return
	}
	if res.Body != "" && w.Header().Get("Content-Type") == "" {
		w.Header().Set("Content-Type", "text/plain")
	}
	w.Header().Set("Content-Length", strconv.Itoa(len(res.Body)))
	w.WriteHeader(res.Status)
	if r.Method != http.MethodHead {
		_, _ = io.WriteString(w, res.Body)
	}
}

// grpcCode is Envoy's mapping of an HTTP status to a gRPC status.
func grpcCode(status int) codes.Code {
	switch status {
	case 400:
		return codes.Internal
	case 401:
		return codes.Unauthenticated
	case 403:
		return codes.PermissionDenied
	case 404:
		return codes.Unimplemented
	case 429, 502, 503, 504:
		return codes.Unavailable
	}
	return codes.Unknown
}
