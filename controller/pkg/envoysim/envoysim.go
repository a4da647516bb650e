// Package envoysim answers "what does Envoy do with this request?" from xDS
// resources alone. It interprets Listeners, RouteConfigurations, Clusters,
// ClusterLoadAssignments and Secrets as Envoy's documentation specifies,
// independently of how Isobar produced them, so that tests can use it as an
// oracle and users can ask it through `isobar-controller explain`.
//
// It knows a subset of Envoy: every field it meets on the way of a request
// is either interpreted, or known not to change where the request goes or
// how it looks upstream (timeouts and stats prefixes, say), or an error that
// names it. It never guesses.
package envoysim

import (
	"fmt"
	"sync"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	"google.golang.org/protobuf/types/known/anypb"

	"isobar.dev/controller/pkg/envoyrules"
)

// Simulator holds one Envoy's configuration, indexed by name.
type Simulator struct {
	listeners []*listenerv3.Listener
	routes    map[string]*routev3.RouteConfiguration
	clusters  map[string]*clusterv3.Cluster
	endpoints map[string]*endpointv3.ClusterLoadAssignment
	secrets   map[string]*tlsv3.Secret

	// buckets are the local rate limits' token buckets, by their
	// configuration: they last as long as the Simulator, as Envoy's last
	// as long as the route configuration.
	mu      sync.Mutex
	buckets map[*anypb.Any]*bucket
}

// New indexes a configuration. Duplicate names are an error, as they are to
// Envoy's xDS client.
func New(listeners []*listenerv3.Listener, routes []*routev3.RouteConfiguration, clusters []*clusterv3.Cluster,
	endpoints []*endpointv3.ClusterLoadAssignment, secrets []*tlsv3.Secret) (*Simulator, error) {
	s := &Simulator{
		listeners: listeners,
		routes:    map[string]*routev3.RouteConfiguration{},
		clusters:  map[string]*clusterv3.Cluster{},
		endpoints: map[string]*endpointv3.ClusterLoadAssignment{},
		secrets:   map[string]*tlsv3.Secret{},
		buckets:   map[*anypb.Any]*bucket{},
	}
	// What Envoy would refuse on load, the simulator refuses too.
	seen := map[string]bool{}
	for _, l := range listeners {
		if seen[l.GetName()] {
			return nil, fmt.Errorf("listener %q defined twice", l.GetName())
		}
		seen[l.GetName()] = true
		if err := envoyrules.Listener(l); err != nil {
			return nil, err
		}
	}
	for _, rc := range routes {
		if err := envoyrules.RouteConfiguration(rc); err != nil {
			return nil, err
		}
	}
	for _, c := range clusters {
		if err := envoyrules.Cluster(c); err != nil {
			return nil, err
		}
	}
	if err := index(s.routes, routes, "route configuration", (*routev3.RouteConfiguration).GetName); err != nil {
		return nil, err
	}
	if err := index(s.clusters, clusters, "cluster", (*clusterv3.Cluster).GetName); err != nil {
		return nil, err
	}
	if err := index(s.endpoints, endpoints, "cluster load assignment", (*endpointv3.ClusterLoadAssignment).GetClusterName); err != nil {
		return nil, err
	}
	if err := index(s.secrets, secrets, "secret", (*tlsv3.Secret).GetName); err != nil {
		return nil, err
	}
	return s, nil
}

func index[T any](into map[string]T, items []T, what string, name func(T) string) error {
	for _, it := range items {
		n := name(it)
		if _, dup := into[n]; dup {
			return fmt.Errorf("%s %q defined twice", what, n)
		}
		into[n] = it
	}
	return nil
}

// Header is one header line; names compare case-insensitively, as HTTP's.
type Header struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// Request is what a client sends to Envoy: a connection to a listener port,
// and for HTTP one request on it.
type Request struct {
	// Port is the port Envoy listens on (a Gateway's privileged ports are
	// mapped to high ones; explain does that mapping).
	Port uint32 `json:"port"`
	UDP  bool   `json:"udp,omitempty"`
	// TLS, SNI and ALPN describe the client's TLS handshake.
	TLS  bool     `json:"tls,omitempty"`
	SNI  string   `json:"sni,omitempty"`
	ALPN []string `json:"alpn,omitempty"`
	// ClientCertificate is the client's answer when Envoy asks for a
	// certificate: its chain (DER, leaf first), or none; nil presents none.
	ClientCertificate func() [][]byte `json:"-"`
	// ClientHello is the client's ClientHello as it came (its TLS
	// records), from which the TLS inspector computes the fingerprints
	// the listener asks for; nil gives none.
	ClientHello []byte `json:"-"`
	// fingerprints are those the TLS inspector computed (Simulate).
	fingerprints fingerprints

	Method    string   `json:"method,omitempty"`
	Scheme    string   `json:"scheme,omitempty"`
	Authority string   `json:"authority,omitempty"`
	Path      string   `json:"path,omitempty"` // with the query
	Headers   []Header `json:"headers,omitempty"`
	// BackendResponseHeaders are what the backend answers with, to show the
	// response headers the client gets after Envoy's changes.
	BackendResponseHeaders []Header `json:"backendResponseHeaders,omitempty"`
	// Seed picks one of weighted backends deterministically.
	Seed uint64 `json:"seed,omitempty"`
	// ProxyProtocol says the connection starts with a PROXY protocol
	// header (a load balancer's in front of Envoy), whose source address
	// is ClientAddress.
	ProxyProtocol bool `json:"proxyProtocol,omitempty"`
	// ClientAddress is the IP address the connection comes from, which
	// IP filters read (with X-Forwarded-For, as the connection manager
	// trusts it).
	ClientAddress string `json:"clientAddress,omitempty"`
	// StartTime is when Envoy received the request (%START_TIME%); the
	// zero time is the Unix epoch's, so that an answer is reproducible.
	StartTime time.Time `json:"-"`
	// Replay says the request was simulated before (to learn what its
	// answer's headers become): it changes no state, such as a rate
	// limit's tokens.
	Replay bool `json:"-"`
	// Redirected are the internal redirects the request followed to get
	// here (Follow sets them).
	Redirected []Hop `json:"redirected,omitempty"`
}

// Answer is what Envoy does with a Request.
type Answer struct {
	Listener    string `json:"listener"`
	FilterChain string `json:"filterChain"`
	// Filter is the network filter that handles the connection.
	Filter string `json:"filter"`
	// DownstreamTLS is set when Envoy terminates TLS: the certificates
	// (SDS secret names) it may present.
	DownstreamTLS []string `json:"downstreamTLS,omitempty"`
	// ClientCertificate is "required" or "optional" when Envoy asks the
	// client for a certificate (and the one presented, if any, passed).
	ClientCertificate string `json:"clientCertificate,omitempty"`

	RouteConfiguration string `json:"routeConfiguration,omitempty"`
	VirtualHost        string `json:"virtualHost,omitempty"`
	Route              string `json:"route,omitempty"`
	RouteIndex         int    `json:"routeIndex"`

	// Exactly one of Backends (forwarded), Response (answered by Envoy)
	// is set.
	Backends []Backend `json:"backends,omitempty"`
	// Upstream is the backend picked with the request's seed.
	Upstream *Backend  `json:"upstream,omitempty"`
	Response *Response `json:"response,omitempty"`

	Mirrors  []Mirror `json:"mirrors,omitempty"`
	Timeout  string   `json:"timeout,omitempty"`
	Retry    string   `json:"retry,omitempty"`
	CORS     bool     `json:"cors,omitempty"`
	Upgrades []string `json:"upgrades,omitempty"`
	// Trace is what Envoy's tracer makes of the request; nil when the
	// connection manager does not trace.
	Trace *Trace `json:"trace,omitempty"`
	// JWT is the token Envoy verifies before it acts on the request
	// (before it asks an authorization server).
	JWT *JWTCheck `json:"jwt,omitempty"`
	// Authorization is the server Envoy asks about the request before it
	// acts on this answer, if the route has one.
	Authorization *Authorization `json:"authorization,omitempty"`
	// RateLimit is what the rate limit service is asked about the
	// request after the authorization server allows it, if the route
	// describes it.
	RateLimit *RateLimitCheck `json:"rateLimit,omitempty"`
	// GRPCWeb is how Envoy translates a gRPC-Web call; nil for other
	// requests.
	GRPCWeb *GRPCWeb `json:"grpcWeb,omitempty"`
	// InternalRedirect is which of the backend's redirects Envoy follows
	// itself (see Follow).
	InternalRedirect *InternalRedirect `json:"internalRedirect,omitempty"`

	// retries are what a forwarded request is played against.
	retries Retries
	// encoder is the compressor's view of the request; nil without a
	// compressor.
	encoder *encoder
}

// Backend is one cluster a request may go to, and the request as that
// backend sees it.
type Backend struct {
	Cluster string `json:"cluster"`
	// Weight is the cluster's share, of TotalWeight.
	Weight      uint32 `json:"weight"`
	TotalWeight uint32 `json:"totalWeight"`
	// Endpoints are address:port; none means Envoy answers 503.
	Endpoints []string `json:"endpoints"`
	// Localities, when the cluster weights its localities, are how
	// Envoy shares connections among Endpoints: see Pick.
	Localities []Locality   `json:"localities,omitempty"`
	TLS        *UpstreamTLS `json:"tls,omitempty"`
	HTTP2      bool         `json:"http2,omitempty"`
	// LoadBalancer is the cluster's lb_policy (ROUND_ROBIN by default).
	LoadBalancer string `json:"loadBalancer,omitempty"`
	// Hash is the request's hash when the cluster is a ring hash and the
	// route's hash policies gave one: it picks the endpoint (see Pick).
	Hash *uint64 `json:"hash,omitempty"`
	// Session is the route's stateful session, if it keeps one.
	Session *Session `json:"session,omitempty"`
	// CircuitBreakers are the cluster's limits (Envoy's defaults where it
	// sets none).
	CircuitBreakers *CircuitBreakers `json:"circuitBreakers,omitempty"`
	// SlowStart is how Envoy ramps the cluster's new endpoints up, if it
	// does (see PickLive).
	SlowStart *SlowStart `json:"slowStart,omitempty"`
	// HealthPorts are the ports Envoy checks endpoints on, where not
	// their own (see HealthAddress).
	HealthPorts map[string]uint32 `json:"healthPorts,omitempty"`
	// HealthCheck is how Envoy checks the cluster's endpoints, if it does.
	HealthCheck *HealthCheck `json:"healthCheck,omitempty"`
	// ConnectionIdle is how long Envoy keeps an idle connection to the
	// backend open (its default when 0).
	ConnectionIdle time.Duration `json:"connectionIdle,omitempty"`
	// Request is what the backend receives; when Status is set, what it
	// would receive if it had endpoints.
	Request *HTTPRequest `json:"request,omitempty"`
	// ResponseHeaders are the headers the client gets when the backend
	// answers with the request's BackendResponseHeaders.
	ResponseHeaders []Header `json:"responseHeaders,omitempty"`
	// Status is 503 when the cluster has no endpoints (or does not exist),
	// which Envoy answers itself.
	Status int `json:"status,omitempty"`
	// Encoding is the content coding (gzip, br, zstd) Envoy compresses
	// the backend's body with, for ResponseHeaders; "" when it passes the
	// body on as is.
	Encoding string `json:"encoding,omitempty"`
}

// Locality is a weighted group of a cluster's endpoints.
type Locality struct {
	Weight    uint32   `json:"weight"`
	Endpoints []string `json:"endpoints"`
}

// Pick is the endpoint a connection or request goes to: its session's,
// when the request names an endpoint the cluster has; the ring's for the
// request's hash, when it has one; otherwise chosen with seed, a
// locality by weight when the cluster weights them, then an endpoint in
// it, or any endpoint alike. "" when there is none.
func (b *Backend) Pick(seed uint64) string {
	eps := b.Endpoints
	if e := b.sessionEndpoint(eps); e != "" {
		return e
	}
	if b.Hash != nil && len(b.Localities) == 0 {
		return ringPick(eps, *b.Hash)
	}
	if len(b.Localities) > 0 {
		var total uint64
		for _, l := range b.Localities {
			total += uint64(l.Weight)
		}
		x := seed % total
		for _, l := range b.Localities {
			if x < uint64(l.Weight) {
				eps = l.Endpoints
				break
			}
			x -= uint64(l.Weight)
		}
		seed /= total
	}
	if len(eps) == 0 {
		return ""
	}
	return eps[seed%uint64(len(eps))]
}

// HTTPRequest is an HTTP request as a backend receives it.
type HTTPRequest struct {
	Method    string   `json:"method"`
	Scheme    string   `json:"scheme"`
	Authority string   `json:"authority"`
	Path      string   `json:"path"`
	Headers   []Header `json:"headers,omitempty"`
}

// UpstreamTLS is how Envoy connects to a backend over TLS.
type UpstreamTLS struct {
	SNI string `json:"sni,omitempty"`
	// ALPN is what the TLS context offers; when it offers nothing, Envoy
	// offers the protocol of the cluster's connection pool ("h2" or
	// "http/1.1").
	ALPN []string `json:"alpn,omitempty"`
	// MinVersion and MaxVersion are crypto/tls versions.
	MinVersion uint16 `json:"minVersion,omitempty"`
	MaxVersion uint16 `json:"maxVersion,omitempty"`
	// ValidationContext is the SDS secret or inline CA it verifies with.
	ValidationContext string   `json:"validationContext,omitempty"`
	SubjectAltNames   []string `json:"subjectAltNames,omitempty"`
	// ClientCertificate is the SDS secret Envoy presents to the backend,
	// ClientCertificatePEM its certificate chain as the backend sees it.
	ClientCertificate    string `json:"clientCertificate,omitempty"`
	ClientCertificatePEM []byte `json:"-"`
}

// Response is an answer Envoy gives itself: a redirect or a direct
// response.
type Response struct {
	Status  int      `json:"status"`
	Headers []Header `json:"headers,omitempty"`
	Body    string   `json:"body,omitempty"`
	// Details are Envoy's response code details where the body does not
	// say why (%RESPONSE_CODE_DETAILS% in its access log).
	Details string `json:"details,omitempty"`
	// GRPCStatus is the gRPC status a gRPC request gets instead of the
	// one Status maps to (0: that one).
	GRPCStatus int `json:"grpcStatus,omitempty"`
	// Encoding is the content coding Envoy compresses Body with; "" when
	// the client gets Body as is.
	Encoding string `json:"encoding,omitempty"`
}

// Mirror is a request_mirror_policy: a copy of the request sent to Cluster
// for the given fraction of requests, to one of its Endpoints (none: the
// copy is dropped).
type Mirror struct {
	Cluster   string       `json:"cluster"`
	Endpoints []string     `json:"endpoints,omitempty"`
	TLS       *UpstreamTLS `json:"tls,omitempty"`
	HTTP2     bool         `json:"http2,omitempty"`
	Fraction  float64      `json:"fraction"`
	// Request is the copy the mirror receives.
	Request *HTTPRequest `json:"request,omitempty"`
}
