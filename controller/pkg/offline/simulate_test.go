package offline

import (
	"cmp"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"isobar.dev/api/ports"
	"isobar.dev/controller/pkg/envoysim"
)

// request is one request against a golden case's Gateway and what Envoy,
// simulated from the generated xDS alone, must do with it; a line of a
// testdata/*.requests.yaml. Valid but wrong
// xDS (a route in the wrong order, a header on the wrong level) fails here
// even where it passes validation.
type request struct {
	Gateway string            `json:"gateway,omitempty"` // NAMESPACE/NAME; default default/web
	Method  string            `json:"method,omitempty"`
	URL     string            `json:"url"`             // http://host/path or https://host/path
	SNI     string            `json:"sni,omitempty"`   // the TLS server name, when not the URL's host
	NoSNI   bool              `json:"noSNI,omitempty"` // a TLS client that sends no server name
	Headers []envoysim.Header `json:"headers,omitempty"`
	Seed    uint64            `json:"seed,omitempty"`
	// ClientAddress is the address the connection comes from; default
	// 192.0.2.1.
	ClientAddress string `json:"clientAddress,omitempty"`
	// ProxyProtocol: the connection starts with a PROXY protocol header
	// whose source is ClientAddress.
	ProxyProtocol bool `json:"proxyProtocol,omitempty"`
	// Refused is what Envoy's refusal of the connection says, when it
	// refuses it.
	Refused string `json:"refused,omitempty"`

	Route    string            `json:"route,omitempty"`    // the matched route's name
	Status   int               `json:"status,omitempty"`   // Envoy's own answer: direct response, redirect, 404
	Cluster  string            `json:"cluster,omitempty"`  // the picked backend
	Location string            `json:"location,omitempty"` // the redirect's location
	Body     string            `json:"body,omitempty"`     // the body of Envoy's own answer
	Upstream map[string]string `json:"upstream,omitempty"` // headers (name -> value, "" for absent) or :path / :authority
	Mirrors  []string          `json:"mirrors,omitempty"`
	// ResponseHeaders are headers of Envoy's own answer (name -> value,
	// "" for absent), with Status; else of the backend's answer as the
	// client gets it.
	ResponseHeaders map[string]string `json:"responseHeaders,omitempty"`
	// Endpoint is the picked backend's endpoint for the request (its
	// hash's, on a ring hash; else by Seed).
	Endpoint string `json:"endpoint,omitempty"`
	// HealthEndpoint is where Envoy's health checks of the picked
	// endpoint go.
	HealthEndpoint string `json:"healthEndpoint,omitempty"`
	// LoadBalancer is the picked cluster's lb_policy.
	LoadBalancer string `json:"loadBalancer,omitempty"`
	// SlowStart is the picked cluster's slow start, as slowStartSummary
	// writes it; "none" for none.
	SlowStart string `json:"slowStart,omitempty"`
	// CircuitBreakers are the picked cluster's limits, as
	// circuitBreakersSummary writes them.
	CircuitBreakers string `json:"circuitBreakers,omitempty"`
	// Authorization is the server Envoy asks about the request first, as
	// authorizationSummary writes it; "none" for none.
	Authorization string `json:"authorization,omitempty"`
	// RateLimit is what the rate limit service is asked about the
	// request, as rateLimitSummary writes it; "none" for nothing.
	RateLimit string `json:"rateLimit,omitempty"`
	// JWT is the token Envoy verifies, as jwtSummary writes it.
	JWT string `json:"jwt,omitempty"`
	// BackendSetCookies are the Set-Cookie headers the backend answers
	// with; SetCookies those the client gets, in order.
	BackendSetCookies []string `json:"backendSetCookies,omitempty"`
	// BackendHeaders are other headers the backend answers with.
	BackendHeaders []envoysim.Header `json:"backendHeaders,omitempty"`
	// Encoding is the content coding Envoy compresses the answer's body
	// with (the backend's, or Envoy's own with Status); "identity" for
	// none.
	Encoding   string   `json:"encoding,omitempty"`
	SetCookies []string `json:"setCookies,omitempty"`
	// Trace is what Envoy's tracer makes of the request, as
	// traceSummary writes it.
	Trace string `json:"trace,omitempty"`
	// AuthorizationRequest is the check the server gets (headers: name ->
	// value, "" for absent; or :path, :authority): an HTTP check's
	// request, or the headers of a gRPC check.
	AuthorizationRequest map[string]string `json:"authorizationRequest,omitempty"`
	// HealthCheck is how Envoy checks the picked cluster's endpoints, as
	// healthCheckSummary writes it; "none" for no health check.
	HealthCheck string `json:"healthCheck,omitempty"`
	// Certificate is the SDS secret of the certificate Envoy presents
	// first (to a client without a server name, the one it gets).
	Certificate string `json:"certificate,omitempty"`
	// TCP says the connection is forwarded as it comes (a tcp_proxy, no
	// request), and Terminated whether Envoy terminates its TLS first.
	TCP        bool  `json:"tcp,omitempty"`
	Terminated *bool `json:"terminated,omitempty"`
	// Protocol is how Envoy speaks to the picked backend: "http/1.1",
	// "h2c" (HTTP/2 in cleartext), "tls" (HTTP/1.1 over TLS) or "h2".
	Protocol string `json:"protocol,omitempty"`
	// Verified says whether Envoy verifies a TLS backend's certificate,
	// and SubjectNames for which names.
	Verified     *bool    `json:"verified,omitempty"`
	SubjectNames []string `json:"subjectNames,omitempty"`
	UpstreamSNI  string   `json:"upstreamSNI,omitempty"`
	// UpstreamClientCertificate is the SDS secret of the certificate
	// Envoy presents to a TLS backend.
	UpstreamClientCertificate string `json:"upstreamClientCertificate,omitempty"`
	// BackendStatus is the answer Envoy gives for the picked backend
	// itself: 500 for an unresolved backendRef's share.
	BackendStatus int `json:"backendStatus,omitempty"`
	// BackendRedirect is a redirect the picked backend answers with;
	// Followed says whether Envoy follows it itself, and when it does, the
	// other fields are of the request it routes to the Location.
	BackendRedirect *backendRedirect `json:"backendRedirect,omitempty"`
	Followed        *bool            `json:"followed,omitempty"`
}

type backendRedirect struct {
	Status   int    `json:"status"`
	Location string `json:"location"`
}

// TestGoldenRequests sends the requests of each testdata/NAME.requests.yaml
// to the Envoy simulated from NAME.in.yaml's translation: a new case is a
// line there.
func TestGoldenRequests(t *testing.T) {
	files, err := filepath.Glob("testdata/*.requests.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden requests: %v", err)
	}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".requests.yaml")
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			var reqs []request
			if err := yaml.UnmarshalStrict(data, &reqs); err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			if len(reqs) == 0 {
				t.Fatalf("%s has no requests", f)
			}
			res, _, err := LoadFiles([]string{"testdata/" + name + ".in.yaml"}, "")
			if err != nil {
				t.Fatal(err)
			}
			result, err := Translate(res, Options{})
			if err != nil {
				t.Fatal(err)
			}
			sims := map[string]*envoysim.Simulator{}
			for i, g := range result.Gateways.Gateways {
				x := result.XDS[i]
				if sims[g.Name], err = envoysim.New(x.Listeners, x.Routes, x.Clusters, x.Endpoints, x.Secrets); err != nil {
					t.Fatal(err)
				}
			}
			for _, r := range reqs {
				check(t, sims, r)
			}
		})
	}
}

func check(t *testing.T, sims map[string]*envoysim.Simulator, r request) {
	t.Helper()
	gw := cmp.Or(r.Gateway, "default/web")
	sim := sims[gw]
	if sim == nil {
		t.Fatalf("no Gateway %s translated", gw)
	}
	scheme, rest, _ := strings.Cut(r.URL, "://")
	host, path, _ := strings.Cut(rest, "/")
	port := int32(80)
	if h, p, ok := strings.Cut(host, ":"); ok {
		n, err := strconv.Atoi(p)
		if err != nil {
			t.Fatal(err)
		}
		host, port = h, int32(n)
	}
	req := envoysim.Request{Method: r.Method, Scheme: scheme, Authority: host, Path: "/" + path, Headers: r.Headers, Seed: r.Seed,
		ClientAddress: cmp.Or(r.ClientAddress, "192.0.2.1"), ProxyProtocol: r.ProxyProtocol}
	if scheme == "https" {
		if port == 80 {
			port = 443
		}
		req.TLS, req.SNI = true, cmp.Or(r.SNI, host)
		if r.NoSNI {
			req.SNI = ""
		}
	}
	req.Port = uint32(ports.ContainerPort(port))
	for _, c := range r.BackendSetCookies {
		req.BackendResponseHeaders = append(req.BackendResponseHeaders, envoysim.Header{Name: "set-cookie", Value: c})
	}
	req.BackendResponseHeaders = append(req.BackendResponseHeaders, r.BackendHeaders...)
	what := r.Method + " " + r.URL
	a, err := sim.Simulate(req)
	switch {
	case r.Refused != "" && (err == nil || !strings.Contains(err.Error(), r.Refused)):
		t.Errorf("%s: %v, want Envoy to refuse the connection: %s", what, err, r.Refused)
		return
	case r.Refused != "":
		return
	case err != nil:
		t.Errorf("%s: %v", what, err)
		return
	}
	if br := r.BackendRedirect; br != nil {
		_, next, followed, err := sim.Follow(req, a, br.Status, br.Location)
		if err != nil {
			t.Errorf("%s: following %d %s: %v", what, br.Status, br.Location, err)
			return
		}
		if r.Followed != nil && followed != *r.Followed {
			t.Errorf("%s: the backend's %d to %s followed by Envoy: %t, want %t", what, br.Status, br.Location, followed, *r.Followed)
		}
		if followed {
			a, what = next, what+" -> "+br.Location
		}
	}
	if r.Certificate != "" && (len(a.DownstreamTLS) == 0 || a.DownstreamTLS[0] != r.Certificate) {
		t.Errorf("%s: Envoy presents %v, want %s first", what, a.DownstreamTLS, r.Certificate)
	}
	if r.Route != "" && a.Route != r.Route {
		t.Errorf("%s: route %q, want %q", what, a.Route, r.Route)
	}
	if got := authorizationSummary(a.Authorization); r.Authorization != "" && got != r.Authorization {
		t.Errorf("%s: authorization %q, want %q", what, got, r.Authorization)
	}
	if got := traceSummary(a.Trace); r.Trace != "" && got != r.Trace {
		t.Errorf("%s: trace %q, want %q", what, got, r.Trace)
	}
	if got := jwtSummary(a.JWT); r.JWT != "" && got != r.JWT {
		t.Errorf("%s: JWT %q, want %q", what, got, r.JWT)
	}
	if got := rateLimitSummary(a.RateLimit); r.RateLimit != "" && got != r.RateLimit {
		t.Errorf("%s: rate limit %q, want %q", what, got, r.RateLimit)
	}
	switch {
	case len(r.AuthorizationRequest) == 0:
	case a.Authorization == nil:
		t.Errorf("%s: no authorization server is asked", what)
	case a.Authorization.GRPC:
		headers := a.Authorization.CheckGRPC(nil).GetAttributes().GetRequest().GetHttp().GetHeaders()
		for name, want := range r.AuthorizationRequest {
			if got := headers[name]; got != want {
				t.Errorf("%s (authorization check): header %s = %q, want %q", what, name, got, want)
			}
		}
	default:
		check, _ := a.Authorization.CheckHTTP(nil)
		checkRequest(t, what+" (authorization check)", r.AuthorizationRequest, check)
	}
	if r.Status != 0 {
		if a.Response == nil || a.Response.Status != r.Status {
			t.Errorf("%s: Envoy answers %+v, want status %d", what, a.Response, r.Status)
		}
		if r.Location != "" && (a.Response == nil || !slices.Contains(a.Response.Headers, envoysim.Header{Name: "location", Value: r.Location})) {
			t.Errorf("%s: response %+v, want location %s", what, a.Response, r.Location)
		}
		if r.Body != "" && (a.Response == nil || a.Response.Body != r.Body) {
			t.Errorf("%s: response %+v, want body %q", what, a.Response, r.Body)
		}
		var headers []envoysim.Header
		if a.Response != nil {
			headers = a.Response.Headers
		}
		checkResponseHeaders(t, what, r.ResponseHeaders, headers)
		if a.Response != nil {
			checkEncoding(t, what, r.Encoding, a.Response.Encoding)
		}
		return
	}
	if a.Upstream == nil {
		t.Errorf("%s: not forwarded (%+v)", what, a.Response)
		return
	}
	if r.BackendStatus != 0 {
		if a.Upstream.Status != r.BackendStatus {
			t.Errorf("%s: backend %s answered %d, want %d", what, a.Upstream.Cluster, a.Upstream.Status, r.BackendStatus)
		}
		return
	}
	if r.Cluster != "" && a.Upstream.Cluster != r.Cluster {
		t.Errorf("%s: cluster %s, want %s", what, a.Upstream.Cluster, r.Cluster)
	}
	endpoint := a.Upstream.Pick(r.Seed)
	if r.Endpoint != "" && endpoint != r.Endpoint {
		t.Errorf("%s: endpoint %s, want %s", what, endpoint, r.Endpoint)
	}
	checkResponseHeaders(t, what, r.ResponseHeaders, a.Upstream.ClientHeaders(endpoint))
	checkEncoding(t, what, r.Encoding, a.Upstream.Encoding)
	if r.SetCookies != nil {
		var got []string
		for _, h := range a.Upstream.ClientHeaders(endpoint) {
			if h.Name == "set-cookie" {
				got = append(got, h.Value)
			}
		}
		if !slices.Equal(got, r.SetCookies) {
			t.Errorf("%s: the client gets Set-Cookie %q, want %q", what, got, r.SetCookies)
		}
	}
	if got := a.Upstream.HealthAddress(endpoint); r.HealthEndpoint != "" && got != r.HealthEndpoint {
		t.Errorf("%s: health checks of %s go to %s, want %s", what, endpoint, got, r.HealthEndpoint)
	}
	checkTransport(t, what, r, a.Upstream)
	if got := healthCheckSummary(a.Upstream.HealthCheck); r.HealthCheck != "" && got != r.HealthCheck {
		t.Errorf("%s: cluster %s health check %q, want %q", what, a.Upstream.Cluster, got, r.HealthCheck)
	}
	if got := circuitBreakersSummary(a.Upstream.CircuitBreakers); r.CircuitBreakers != "" && got != r.CircuitBreakers {
		t.Errorf("%s: cluster %s limits %q, want %q", what, a.Upstream.Cluster, got, r.CircuitBreakers)
	}
	if got := slowStartSummary(a.Upstream.SlowStart); r.SlowStart != "" && got != r.SlowStart {
		t.Errorf("%s: cluster %s slow start %q, want %q", what, a.Upstream.Cluster, got, r.SlowStart)
	}
	if r.LoadBalancer != "" && a.Upstream.LoadBalancer != r.LoadBalancer {
		t.Errorf("%s: cluster %s balances %s, want %s", what, a.Upstream.Cluster, a.Upstream.LoadBalancer, r.LoadBalancer)
	}
	if tcp := a.Filter == "envoy.filters.network.tcp_proxy"; tcp != r.TCP {
		t.Errorf("%s: filter %s, want a tcp_proxy: %t", what, a.Filter, r.TCP)
	}
	if r.Terminated != nil && (len(a.DownstreamTLS) > 0) != *r.Terminated {
		t.Errorf("%s: Envoy terminates TLS with %v, want terminated: %t", what, a.DownstreamTLS, *r.Terminated)
	}
	if r.TCP {
		return
	}
	// The golden inputs mostly have no EndpointSlices, so Envoy would
	// answer 503; the request it would forward is still checked.
	if a.Upstream.Request == nil {
		t.Errorf("%s: backend %s has no request", what, a.Upstream.Cluster)
		return
	}
	checkRequest(t, what, r.Upstream, a.Upstream.Request)
	var mirrors []string
	for _, m := range a.Mirrors {
		mirrors = append(mirrors, m.Cluster)
	}
	if r.Mirrors != nil && !slices.Equal(mirrors, r.Mirrors) {
		t.Errorf("%s: mirrors %v, want %v", what, mirrors, r.Mirrors)
	}
}

// healthCheckSummary writes a health check as request cases expect it:
// "GET host/path every 10s within 2s, down after 3, up after 2", with
// the expected statuses, or "TCP every ...".
func healthCheckSummary(h *envoysim.HealthCheck) string {
	if h == nil {
		return "none"
	}
	what := "TCP"
	if h.HTTP {
		what = "GET " + h.Host + h.Path
		if h.HTTP2 {
			what += " (HTTP/2)"
		}
	}
	s := fmt.Sprintf("%s every %s within %s, down after %d, up after %d", what, h.Interval, h.Timeout, h.Unhealthy, h.Healthy)
	for _, r := range h.ExpectedStatuses {
		s += fmt.Sprintf(", [%d,%d)", r[0], r[1])
	}
	return s
}

// slowStartSummary writes a slow start as request cases expect it:
// "over 30s, aggression 2, from 5%".
func slowStartSummary(s *envoysim.SlowStart) string {
	if s == nil {
		return "none"
	}
	return fmt.Sprintf("over %s, aggression %g, from %g%%", s.Window, s.Aggression, s.MinWeightPercent)
}

// checkRequest checks what a server receives: headers (name -> value,
// "" for absent, several joined by ","), :path or :authority.
func checkRequest(t *testing.T, what string, want map[string]string, up *envoysim.HTTPRequest) {
	t.Helper()
	for name, want := range want {
		var got string
		switch name {
		case ":path":
			got = up.Path
		case ":authority":
			got = up.Authority
		default:
			var vals []string
			for _, hd := range up.Headers {
				if hd.Name == name {
					vals = append(vals, hd.Value)
				}
			}
			got = strings.Join(vals, ",")
		}
		if got != want {
			t.Errorf("%s: upstream %s = %q, want %q", what, name, got, want)
		}
	}
}

// authorizationSummary writes an authorization server as request cases
// expect it: "http default/auth/80 /check" or "grpc default/auth/9000/grpc",
// with ", body up to N" when checks carry the body (" whole" when a
// longer one is refused, " as bytes"), the timeout when not 10s, ", fails
// open", and ", context k=v ..." (sorted).
// traceSummary writes a trace as request cases expect it: "to C as S
// (authority A, within T), P%, url U, attributes k=v ..., environment
// k=NAME ...".
func traceSummary(tr *envoysim.Trace) string {
	if tr == nil {
		return "none"
	}
	s := fmt.Sprintf("to %s as %s (authority %s", tr.Collector.Cluster, tr.ServiceName, tr.Authority)
	if tr.Timeout > 0 {
		s += fmt.Sprintf(", within %s", tr.Timeout)
	}
	s += fmt.Sprintf("), %g%%", tr.Sampling)
	if tr.ClientSampling != 100 || tr.RandomSampling != 100 {
		s += fmt.Sprintf(" of client %g%% and random %g%%", tr.ClientSampling, tr.RandomSampling)
	}
	s += ", url " + tr.URL
	for _, part := range []struct {
		name string
		m    map[string]string
	}{{"attributes", tr.Attributes}, {"environment", tr.Environment}} {
		if len(part.m) == 0 {
			continue
		}
		s += ", " + part.name + pairs(part.m)
	}
	return s
}

// pairs writes a map as " k=v" for each key, in key order.
func pairs(m map[string]string) string {
	var s string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		s += " " + k + "=" + m[k]
	}
	return s
}

// jwtSummary writes a JWT check as request cases expect it: "provider
// P, issuer I, audiences [a b], keys from URI via C within 1s, cached
// 5m0s", then ", forwarded" when Envoy keeps the token on the request.
func jwtSummary(c *envoysim.JWTCheck) string {
	if c == nil {
		return "none"
	}
	s := fmt.Sprintf("provider %s, issuer %s, audiences %v, keys from %s via %s within %s, cached %s", c.Provider, c.Issuer, c.Audiences, c.URI, c.Server.Cluster, c.Timeout, c.CacheDuration)
	if c.Forward {
		s += ", forwarded"
	}
	return s
}

func authorizationSummary(z *envoysim.Authorization) string {
	if z == nil {
		return "none"
	}
	s := "http " + z.Server.Cluster
	if z.GRPC {
		s = "grpc " + z.Server.Cluster
	} else if z.PathPrefix != "" {
		s += " " + z.PathPrefix
	}
	if z.MaxBody > 0 {
		s += fmt.Sprintf(", body up to %d", z.MaxBody)
		if z.WholeBody {
			s += " whole"
		}
		if z.BodyAsBytes {
			s += " as bytes"
		}
	}
	if z.Timeout != 10*time.Second {
		s += ", timeout " + z.Timeout.String()
	}
	if z.FailOpen {
		s += ", fails open"
	}
	if len(z.Context) > 0 {
		s += ", context" + pairs(z.Context)
	}
	return s
}

// rateLimitSummary writes a rate limit check as request cases expect it:
// "<cluster> <domain>: k=v,k=v; k=v", the descriptors in order, then
// ", fails open", ", headers" and ", grpc status N" when not 14.
func rateLimitSummary(c *envoysim.RateLimitCheck) string {
	if c == nil {
		return "none"
	}
	var ds []string
	for _, d := range c.Descriptors {
		var es []string
		for _, e := range d {
			es = append(es, e[0]+"="+e[1])
		}
		ds = append(ds, strings.Join(es, ","))
	}
	s := c.Server.Cluster + " " + c.Domain + ": " + strings.Join(ds, "; ")
	if c.FailOpen {
		s += ", fails open"
	}
	if c.Headers {
		s += ", headers"
	}
	if c.GRPCStatus != 14 {
		s += fmt.Sprintf(", grpc status %d", c.GRPCStatus)
	}
	return s
}

// circuitBreakersSummary writes a cluster's limits as request cases expect
// them: "connections 100, pending 1024, requests 1024, retries 3" (with a
// retry budget "retry budget 50% of 5s, at least 2" in place of the
// retries), and the per host connections when set.
func circuitBreakersSummary(c *envoysim.CircuitBreakers) string {
	if c == nil {
		return "none"
	}
	s := fmt.Sprintf("connections %d, pending %d, requests %d, retries %d", c.MaxConnections, c.MaxPendingRequests, c.MaxRequests, c.MaxRetries)
	if b := c.RetryBudget; b != nil {
		s = fmt.Sprintf("connections %d, pending %d, requests %d, retry budget %g%% of %s, at least %d", c.MaxConnections, c.MaxPendingRequests, c.MaxRequests, b.Percent, b.Interval, b.MinRetries)
	}
	if c.PerHostMaxConnections > 0 {
		s += fmt.Sprintf(", per host connections %d", c.PerHostMaxConnections)
	}
	return s
}

// checkResponseHeaders checks headers the client gets (name -> value, ""
// for absent).
func checkResponseHeaders(t *testing.T, what string, want map[string]string, headers []envoysim.Header) {
	t.Helper()
	for name, v := range want {
		got := ""
		for _, h := range headers {
			if h.Name == name {
				got = h.Value
			}
		}
		if got != v {
			t.Errorf("%s: response header %s = %q, want %q", what, name, got, v)
		}
	}
}

// checkTransport checks how Envoy connects to the picked backend.
func checkTransport(t *testing.T, what string, r request, b *envoysim.Backend) {
	t.Helper()
	if r.Protocol != "" {
		got := "http/1.1"
		switch {
		case b.HTTP2 && b.TLS != nil:
			got = "h2"
		case b.HTTP2:
			got = "h2c"
		case b.TLS != nil:
			got = "tls"
		}
		if got != r.Protocol {
			t.Errorf("%s: Envoy speaks %s to %s, want %s", what, got, b.Cluster, r.Protocol)
		}
	}
	if r.Verified == nil && r.UpstreamSNI == "" && r.UpstreamClientCertificate == "" {
		return
	}
	if b.TLS == nil {
		t.Errorf("%s: no TLS to %s", what, b.Cluster)
		return
	}
	if r.UpstreamClientCertificate != "" && b.TLS.ClientCertificate != r.UpstreamClientCertificate {
		t.Errorf("%s: Envoy presents %q to the backend, want %q", what, b.TLS.ClientCertificate, r.UpstreamClientCertificate)
	}
	if r.UpstreamSNI != b.TLS.SNI {
		t.Errorf("%s: SNI %q, want %q", what, b.TLS.SNI, r.UpstreamSNI)
	}
	if r.Verified != nil {
		if verified := b.TLS.ValidationContext != ""; verified != *r.Verified {
			t.Errorf("%s: the backend's certificate verified: %t, want %t", what, verified, *r.Verified)
		}
		if !slices.Equal(b.TLS.SubjectAltNames, r.SubjectNames) {
			t.Errorf("%s: subject names %v, want %v", what, b.TLS.SubjectAltNames, r.SubjectNames)
		}
	}
}

// checkEncoding compares the content coding of an answer's body with the
// one a case wants ("identity": none; "": any).
func checkEncoding(t *testing.T, what, want, got string) {
	t.Helper()
	if want != "" && cmp.Or(got, "identity") != want {
		t.Errorf("%s: the body is encoded %q, want %q", what, cmp.Or(got, "identity"), want)
	}
}
