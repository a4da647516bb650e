// Package ir is the intermediate representation between the two translation
// stages: what Envoy must do for one Gateway, in terms of listeners, virtual
// hosts, routes and backends, with every Gateway API rule (precedence,
// hostname intersection, listener isolation, reference checks) already
// applied. The xds package turns it into Envoy resources without knowing
// the Gateway API.
//
// IR values are plain data, compared and printed as they are in golden tests.
//
// IR values are immutable once a translation has returned them: stage one
// hands out the same pointers for what did not change, and stage two keeps
// the Envoy resources it built from each pointer, so a value written in
// place would be served stale, and a caller holding an earlier result
// would see it change. A translation builds new values for what changed.
// The same holds for stage one's input: the informer cache's objects and
// an earlier snapshot's slices are shared, never written. The offline
// package's incremental tests enforce both, comparing each step's input and
// the previous step's results before and after a translation.
package ir

import (
	"bytes"
	"fmt"
	"slices"
	"time"
)

// Gateway is one Gateway's data plane configuration.
type Gateway struct {
	// Name is "namespace/name" of the Gateway.
	Name      string      `json:"name"`
	Listeners []*Listener `json:"listeners,omitempty"` // ordered by port
	// Clusters are the backends the routes use, by name.
	Clusters []*Cluster `json:"clusters,omitempty"` // ordered by name
	// Secrets are the TLS certificates the listeners serve, by name.
	Secrets []*Secret `json:"secrets,omitempty"` // ordered by name
	// RateLimit is the global rate limit service of every connection
	// manager; nil for none.
	RateLimit *RateLimitService `json:"rateLimit,omitempty"`
	// Tracing is where every connection manager sends the spans of the
	// requests it samples; nil for no tracing.
	Tracing *Tracing `json:"tracing,omitempty"`
	// ExtAuthHeaders are the lists of request headers routes' external
	// authorization checks carry (ExtAuth.AllowedHeaders), each once:
	// Envoy takes the list from its ext_authz filter, not from a route,
	// so every connection manager has a filter for each.
	ExtAuthHeaders [][]string `json:"extAuthHeaders,omitempty"`
	// ExtAuth is the profile's global authorization server, which checks
	// every route without a server of its own (Route.ExtAuth) unless the
	// route's policy (Route.ExtAuthPolicy), or else its own, disables it;
	// nil for none.
	ExtAuth *GlobalExtAuth `json:"extAuth,omitempty"`
	// Serial tells this IR from every other its process built; Changes,
	// when set, say what differs from the IR of serial Changes.Base.
	Serial  uint64   `json:"-"`
	Changes *Changes `json:"-"`
}

// Changes say which parts of a Gateway's IR the first stage built again
// since the IR it built before (Base): a second stage that translated
// Base last builds these parts again and keeps what it built of every
// other, which is as it was. Nil Changes, or a Base it did not translate
// last, mean everything is new to it. Names are those of the IR, unique
// within a Gateway.
type Changes struct {
	Base uint64
	// Listeners are the listeners built again (added or changed); a
	// listener gone is not in Gateway.Listeners.
	Listeners map[string]bool
	// RouteTables are the route tables built again, by name, each with
	// the names of its virtual hosts built again (added or changed); a
	// virtual host of the table that is not named is as it was in Base's
	// table of that name. Only listeners built again have tables here.
	RouteTables map[string]map[string]bool
	// Chains are the HTTPS filter chains built again, by the name of
	// their route table.
	Chains map[string]bool
}

// KeepsListener reports whether the listener of this name is as it was
// in Base; never with nil Changes.
func (c *Changes) KeepsListener(name string) bool { return c != nil && !c.Listeners[name] }

// KeepsRouteTable reports whether the route table of this name is as it
// was in Base.
func (c *Changes) KeepsRouteTable(name string) bool {
	if c == nil {
		return false
	}
	_, changed := c.RouteTables[name]
	return !changed
}

// KeepsVirtualHost reports whether the virtual host of this name, in a
// route table built again, is as it was in Base's table.
func (c *Changes) KeepsVirtualHost(table, name string) bool {
	return c != nil && !c.RouteTables[table][name]
}

// KeepsChain reports whether the HTTPS filter chain of this route table
// is as it was in Base.
func (c *Changes) KeepsChain(table string) bool { return c != nil && !c.Chains[table] }

// Protocol is what an Envoy listener speaks.
type Protocol string

const (
	HTTP  Protocol = "HTTP"
	HTTPS Protocol = "HTTPS" // TLS terminated, then HTTP
	TLS   Protocol = "TLS"   // TLS passthrough or terminated, then TCP
	TCP   Protocol = "TCP"
	UDP   Protocol = "UDP"
)

// Listener is one Envoy listener: all the Gateway listeners that share a
// port.
type Listener struct {
	// Name is http_<port>, https_<port>, tls_<port>, tcp_<port> or udp_<port>,
	// with the Gateway listener port.
	Name     string   `json:"name"`
	Protocol Protocol `json:"protocol"`
	// Port is the Gateway listener port; ContainerPort the port Envoy binds.
	Port          int32 `json:"port"`
	ContainerPort int32 `json:"containerPort"`
	// HTTP is set for protocol HTTP.
	HTTP *RouteTable `json:"http,omitempty"`
	// Chains are the TLS filter chains of HTTPS and TLS listeners, by server
	// name; a chain with no server names matches any.
	Chains []*Chain `json:"chains,omitempty"`
	// TCP is set for protocol TCP, UDP for protocol UDP: every connection
	// or datagram goes to this destination.
	TCP *Destination `json:"tcp,omitempty"`
	UDP *Destination `json:"udp,omitempty"`
}

// Chain is a TLS filter chain: the server names (SNI) it matches, and what
// it does with the connection.
type Chain struct {
	ServerNames []string `json:"serverNames,omitempty"`
	// Certificates name Secrets in Gateway.Secrets; empty for passthrough.
	Certificates []string `json:"certificates,omitempty"`
	// HTTP is set when the chain terminates TLS and routes HTTP.
	HTTP *RouteTable `json:"http,omitempty"`
	// TCP is set when the chain forwards the connection (TLS passthrough, or
	// terminated TLS to a TCP backend).
	TCP *Destination `json:"tcp,omitempty"`
	// ClientValidation, on an HTTPS chain, is how Envoy checks the
	// certificates clients present (the Gateway's spec.tls.frontend).
	ClientValidation *ClientValidation `json:"clientValidation,omitempty"`
	// ForwardClientCert, when set, replaces a request's
	// x-forwarded-client-cert header with the details of the client's
	// certificate it names (HTTPProxy's forwardClientCertificate); a
	// request without one loses the header, as every other request does.
	ForwardClientCert *ForwardClientCert `json:"forwardClientCert,omitempty"`
	// MinTLS and MaxTLS bound the TLS versions ("1.2", "1.3") where a
	// chain's own settings say (an HTTPProxy's); "" is the fleet's.
	MinTLS string `json:"minTLS,omitempty"`
	MaxTLS string `json:"maxTLS,omitempty"`
}

// ClientValidation is how Envoy checks a client's certificate.
type ClientValidation struct {
	// CA is the PEM bundle of trusted certificates, from CARefs.
	CA     []byte   `json:"-"`
	CARefs []string `json:"caRefs"`
	// Optional lets in clients without a certificate or with one that does
	// not verify (AllowInsecureFallback).
	Optional bool `json:"optional,omitempty"`
	// Requested asks clients for a certificate without requiring one;
	// one presented must verify (HTTPProxy's optionalClientCertificate).
	Requested bool `json:"requested,omitempty"`
	// Unverified asks for a certificate and accepts any presented,
	// verifying none (HTTPProxy's skipClientCertValidation); CA may then
	// be empty.
	Unverified bool `json:"unverified,omitempty"`
	// CRL is a PEM bundle of revocation lists: a client certificate
	// (with CRLLeafOnly, only the client's own) must have its issuer's
	// list, and not be on it.
	CRL         []byte `json:"-"`
	CRLLeafOnly bool   `json:"crlLeafOnly,omitempty"`
}

// Equal reports whether two validations check alike.
func (v *ClientValidation) Equal(o *ClientValidation) bool {
	if v == nil || o == nil {
		return v == o
	}
	return bytes.Equal(v.CA, o.CA) && slices.Equal(v.CARefs, o.CARefs) && v.Optional == o.Optional &&
		v.Requested == o.Requested && v.Unverified == o.Unverified && bytes.Equal(v.CRL, o.CRL) && v.CRLLeafOnly == o.CRLLeafOnly
}

// SlowStart is Envoy's slow start: an endpoint added to a cluster gets a
// share of requests that grows over Window, from MinWeightPercent, as
// (time in window / Window)^(1/Aggression). Comparable: it is part of a
// cluster's identity.
type SlowStart struct {
	Window           time.Duration `json:"window,omitempty"`
	Aggression       float64       `json:"aggression,omitempty"`
	MinWeightPercent uint32        `json:"minWeightPercent,omitempty"`
}

// CircuitBreakers are the limits of Envoy's circuit breakers on a cluster:
// connections, requests waiting for one, requests and retries at once, and
// connections to one endpoint; zero leaves Envoy's default. A request over
// a limit is answered 503 at once (a retry over max retries is not made).
type CircuitBreakers struct {
	MaxConnections        uint32 `json:"maxConnections,omitempty"`
	MaxPendingRequests    uint32 `json:"maxPendingRequests,omitempty"`
	MaxRequests           uint32 `json:"maxRequests,omitempty"`
	MaxRetries            uint32 `json:"maxRetries,omitempty"`
	PerHostMaxConnections uint32 `json:"perHostMaxConnections,omitempty"`
	// RetryBudget, when set, limits retries instead of MaxRetries.
	RetryBudget RetryBudget `json:"retryBudget,omitzero"`
}

// RetryBudget is Envoy's retry budget: retries in flight at once may be up
// to Percent of the requests started in the last Interval, and always at
// least MinRetries. The zero value is none.
type RetryBudget struct {
	Percent    int           `json:"percent"`
	Interval   time.Duration `json:"interval"`
	MinRetries uint32        `json:"minRetries"`
}

// LoadBalancer is a cluster's load balancing policy.
type LoadBalancer string

// The load balancing policies a cluster may have besides round robin.
const (
	LeastRequest LoadBalancer = "LeastRequest"
	Random       LoadBalancer = "Random"
	// RingHash sends the requests of one hash (see HashPolicy) to one
	// endpoint while the endpoints stay, and few others when they change.
	RingHash LoadBalancer = "RingHash"
)

// ForwardClientCert names the details of a client's certificate that go
// upstream in x-forwarded-client-cert, beside its hash.
type ForwardClientCert struct {
	Subject bool `json:"subject,omitempty"`
	Cert    bool `json:"cert,omitempty"`
	Chain   bool `json:"chain,omitempty"`
	DNS     bool `json:"dns,omitempty"`
	URI     bool `json:"uri,omitempty"`
}

// RouteTable becomes one RouteConfiguration.
type RouteTable struct {
	Name         string         `json:"name"`
	VirtualHosts []*VirtualHost `json:"virtualHosts,omitempty"` // ordered by name
}

// VirtualHost serves a set of domains; its routes are in match order.
type VirtualHost struct {
	Name    string   `json:"name"`
	Domains []string `json:"domains"`
	Routes  []*Route `json:"routes,omitempty"`
	// Policy is what applies to every route of the host, unless a route
	// has its own.
	Policy *VirtualHostPolicy `json:"policy,omitempty"`
}

// VirtualHostPolicy is what a virtual host's owner (an HTTPProxy root)
// asks of all its routes.
type VirtualHostPolicy struct {
	LocalRateLimit *LocalRateLimit `json:"localRateLimit,omitempty"`
	// GlobalRateLimits are the descriptors of the virtual host's requests
	// that the Gateway's rate limit service is asked about, for the
	// routes without their own.
	GlobalRateLimits []RateLimitDescriptor `json:"globalRateLimits,omitempty"`
	// JWTProviders are the providers whose tokens the virtual host's
	// routes may require (Route.JWTProvider).
	JWTProviders []JWTProvider `json:"jwtProviders,omitempty"`
}

// JWTProvider is who issues the tokens a route may require (Envoy's
// jwt_authn): a token must carry the issuer, one of the audiences (when
// there are any), be in time and be signed with a key of the JWKS.
type JWTProvider struct {
	// Name is unique within the Gateway: the virtual host's name, "/",
	// and the provider's own.
	Name      string   `json:"name"`
	Issuer    string   `json:"issuer,omitempty"`
	Audiences []string `json:"audiences,omitempty"`
	// JWKS is where Envoy fetches the keys from.
	JWKS RemoteJWKS `json:"jwks"`
	// Forward keeps the token on the request to the backend; else Envoy
	// removes it.
	Forward bool `json:"forward,omitempty"`
}

// RemoteJWKS is a JSON Web Key Set Envoy fetches over HTTP(S) from URI
// through Cluster, and keeps for CacheDuration (Envoy's default when 0).
type RemoteJWKS struct {
	URI           string        `json:"uri"`
	Cluster       string        `json:"cluster"`
	Timeout       time.Duration `json:"timeout"`
	CacheDuration time.Duration `json:"cacheDuration,omitempty"`
}

// RateLimitService is the global rate limit service the Gateway's
// connection managers ask about the requests that have descriptors
// (Envoy's ratelimit filter).
type RateLimitService struct {
	Cluster string `json:"cluster"`
	// Authority is the :authority of the checks; the cluster's name when
	// empty.
	Authority string `json:"authority,omitempty"`
	Domain    string `json:"domain"`
	// Timeout bounds the wait for an answer (Envoy's default, 20ms, when
	// 0).
	Timeout time.Duration `json:"timeout,omitempty"`
	// FailOpen lets requests through when the service cannot be asked;
	// else they are answered 500.
	FailOpen bool `json:"failOpen,omitempty"`
	// XRateLimitHeaders adds the draft-03 x-ratelimit-* headers.
	XRateLimitHeaders bool `json:"xRateLimitHeaders,omitempty"`
	// ResourceExhausted answers limited gRPC requests RESOURCE_EXHAUSTED.
	ResourceExhausted bool `json:"resourceExhausted,omitempty"`
}

// Tracing is Envoy's OpenTelemetry tracer: a span of each sampled
// request goes to an OTLP/gRPC collector.
type Tracing struct {
	Cluster string `json:"cluster"`
	// Authority is the :authority of the exports; the cluster's name when
	// empty.
	Authority string `json:"authority,omitempty"`
	// Timeout bounds an export (Envoy's default when 0).
	Timeout     time.Duration `json:"timeout,omitempty"`
	ServiceName string        `json:"serviceName"`
	// Sampling is the percentage of requests traced.
	Sampling float64 `json:"sampling"`
	// ClientSampling and RandomSampling are the percentages of requests
	// with an x-client-trace-id, and of the others, that are traced
	// before Sampling; 100 each as Envoy's default.
	ClientSampling float64 `json:"clientSampling"`
	RandomSampling float64 `json:"randomSampling"`
	// MaxPathTagLength is how much of the URL http.url keeps.
	MaxPathTagLength uint32 `json:"maxPathTagLength"`
	// Tags are the attributes every span carries besides Envoy's own.
	Tags []TracingTag `json:"tags,omitempty"`
}

// TracingTag is an attribute of every span: exactly one of a literal
// value, a request header's value (none without the header) and an
// environment variable of the Envoy process.
type TracingTag struct {
	Name        string `json:"name"`
	Literal     string `json:"literal,omitempty"`
	Header      string `json:"header,omitempty"`
	Environment string `json:"environment,omitempty"`
}

// RateLimitDescriptor is one descriptor a request is described by, its
// entries in order; a request that lacks what an entry needs (a header)
// has no such descriptor.
type RateLimitDescriptor struct {
	Entries []RateLimitEntry `json:"entries"`
}

// RateLimitEntry is one entry of a descriptor: exactly one of a generic
// key and value, a request header's value under a key, a value for
// whether the request's headers match, and the client's address.
type RateLimitEntry struct {
	// Key and Value: a generic key ("generic_key" when Key is empty).
	Key   string `json:"key,omitempty"`
	Value string `json:"value,omitempty"`
	// Header is the request header whose value is the entry's, under
	// Key.
	Header string `json:"header,omitempty"`
	// Headers, with Value: the entry is ("header_match", Value) when the
	// request's headers match all of them (ExpectMatch), or when they do
	// not (else).
	Headers     []StringMatch `json:"headers,omitempty"`
	ExpectMatch bool          `json:"expectMatch,omitempty"`
	// RemoteAddress: the entry is ("remote_address", the client's
	// address as the connection manager trusts it).
	RemoteAddress bool `json:"remoteAddress,omitempty"`
}

// LocalRateLimit is a token bucket each Envoy keeps for the requests of a
// route or virtual host: full at first with Max tokens, it gains PerFill
// every FillInterval, up to Max; a request that finds no token is answered
// Status (429 when zero), with ResponseHeaders.
type LocalRateLimit struct {
	Max             uint32        `json:"max"`
	PerFill         uint32        `json:"perFill"`
	FillInterval    time.Duration `json:"fillInterval"`
	Status          uint32        `json:"status,omitempty"`
	ResponseHeaders []Header      `json:"responseHeaders,omitempty"`
}

// Route is one match and what to do with requests that match it.
type Route struct {
	// Name identifies the Gateway API rule and match it came from.
	Name  string `json:"name"`
	Match Match  `json:"match"`

	// Exactly one of Destination, Redirect and DirectResponse is set.
	Destination    *Destination    `json:"destination,omitempty"`
	Redirect       *Redirect       `json:"redirect,omitempty"`
	DirectResponse *DirectResponse `json:"directResponse,omitempty"`

	RequestHeaders  *HeaderModifier `json:"requestHeaders,omitempty"`
	ResponseHeaders *HeaderModifier `json:"responseHeaders,omitempty"`
	Rewrite         *Rewrite        `json:"rewrite,omitempty"`
	// Mirrors receive a copy of a share of the requests; their responses
	// are discarded.
	Mirrors []Mirror `json:"mirrors,omitempty"`
	// Timeout bounds the whole request, retries included; BackendTimeout
	// each attempt. Zero leaves Envoy's default; Disabled turns the route
	// timeout off.
	Timeout         time.Duration `json:"timeout,omitempty"`
	TimeoutDisabled bool          `json:"timeoutDisabled,omitempty"`
	BackendTimeout  time.Duration `json:"backendTimeout,omitempty"`
	// IdleTimeout bounds how long the stream may wait for the response
	// to start (HTTPProxy's timeoutPolicy.idle); IdleTimeoutDisabled
	// turns the fleet's stream idle timeout off for the route.
	IdleTimeout         time.Duration `json:"idleTimeout,omitempty"`
	IdleTimeoutDisabled bool          `json:"idleTimeoutDisabled,omitempty"`
	Retry               *Retry        `json:"retry,omitempty"`
	CORS                *CORS         `json:"cors,omitempty"`
	// WebsocketsDisabled refuses websocket upgrades on the route, which
	// every listener otherwise allows: an HTTPProxy route allows them only
	// with enableWebsockets.
	WebsocketsDisabled bool `json:"websocketsDisabled,omitempty"`
	// IPFilter lets in or keeps out requests by the client's address.
	IPFilter *IPFilter `json:"ipFilter,omitempty"`
	// HashPolicies make the hash of a request that a RingHash cluster
	// picks its endpoint by.
	HashPolicies []HashPolicy `json:"hashPolicies,omitempty"`
	// LocalRateLimit is the route's own; its virtual host's applies to a
	// route without.
	LocalRateLimit *LocalRateLimit `json:"localRateLimit,omitempty"`
	// Session keeps a client on the endpoint its session started on.
	Session *Session `json:"session,omitempty"`
	// InternalRedirect is which redirects of its backends Envoy follows
	// itself (HTTPProxy's internalRedirectPolicy).
	InternalRedirect *InternalRedirect `json:"internalRedirect,omitempty"`
	// ExtAuth is the authorization server Envoy asks about each request
	// before it acts on it.
	ExtAuth *ExtAuth `json:"extAuth,omitempty"`
	// ExtAuthPolicy is whether the Gateway's global authorization server
	// (Gateway.ExtAuth) checks the route, and the context it carries, when
	// the route has no server of its own; nil takes the global policy.
	ExtAuthPolicy *AuthPolicy `json:"extAuthPolicy,omitempty"`
	// GlobalRateLimits are the descriptors the rate limit service is
	// asked about, in place of the virtual host's; IgnoreVirtualHostRateLimits
	// asks about none of the virtual host's when the route has none.
	GlobalRateLimits            []RateLimitDescriptor `json:"globalRateLimits,omitempty"`
	IgnoreVirtualHostRateLimits bool                  `json:"ignoreVirtualHostRateLimits,omitempty"`
	// JWTProvider names the provider of the virtual host (its
	// JWTProvider.Name) whose valid token every request must carry; none
	// when empty.
	JWTProvider string `json:"jwtProvider,omitempty"`
}

// ExtAuth is an external authorization server (Envoy's ext_authz): Envoy
// asks it about each request of a route, over HTTP or Envoy's gRPC
// protocol, and acts on the request only when it allows it; otherwise the
// client gets its answer, and 403 when it cannot be asked (unless
// FailOpen).
type ExtAuth struct {
	GRPC    bool   `json:"grpc,omitempty"`
	Cluster string `json:"cluster"`
	// Authority is the server's host:port, which HTTP checks go to; the
	// :authority of gRPC checks, the cluster's name when empty.
	Authority string `json:"authority"`
	// Timeout is how long Envoy waits for the answer (10s when 0).
	Timeout time.Duration `json:"timeout,omitempty"`
	// FailOpen lets a request through when the server cannot be asked or
	// does not answer in time, instead of answering 403.
	FailOpen bool `json:"failOpen,omitempty"`
	// Context are the key/value pairs every check of the route carries
	// (gRPC's context_extensions).
	Context map[string]string `json:"context,omitempty"`
	// WholeBody refuses (413) a body longer than MaxBody rather than
	// cutting it there; BodyAsBytes sends it as raw bytes, not a string.
	WholeBody   bool `json:"wholeBody,omitempty"`
	BodyAsBytes bool `json:"bodyAsBytes,omitempty"`
	// PathPrefix goes before the request's path in an HTTP check.
	PathPrefix string `json:"pathPrefix,omitempty"`
	// UpstreamHeaders are the headers of an HTTP server's allowing answer
	// that the request carries on; none means all of them.
	UpstreamHeaders []string `json:"upstreamHeaders,omitempty"`
	// MaxBody is how much of the request's body the check carries (none
	// when 0); a longer body is cut there.
	MaxBody uint32 `json:"maxBody,omitempty"`
	// AllowedHeaders, when set, are the request headers a check carries
	// (sorted, lower case): a gRPC check those alone, an HTTP check
	// those besides the ones it always carries. Nil is Envoy's default:
	// every header to a gRPC server, those it always carries to an HTTP
	// one.
	AllowedHeaders []string `json:"allowedHeaders,omitempty"`
}

// GlobalExtAuth is the server that checks every route of a Gateway by
// default, with its default policy.
type GlobalExtAuth struct {
	// Server is the check; its Context is the default policy's.
	Server ExtAuth `json:"server"`
	// Disabled leaves routes unchecked unless their policy enables the
	// check.
	Disabled bool `json:"disabled,omitempty"`
}

// AuthPolicy is a route's own answer to the global authorization
// server's policy.
type AuthPolicy struct {
	Disabled bool              `json:"disabled,omitempty"`
	Context  map[string]string `json:"context,omitempty"`
}

// For is the check the global server makes of a route with policy p (nil:
// the default policy), nil when the route is not checked.
func (g *GlobalExtAuth) For(p *AuthPolicy) *ExtAuth {
	switch {
	case g == nil:
		return nil
	case p == nil && g.Disabled, p != nil && p.Disabled:
		return nil
	case p == nil:
		return &g.Server
	}
	out := g.Server
	out.Context = p.Context
	return &out
}

// InternalRedirect makes Envoy follow a backend's redirect itself: the
// request is routed again to the Location, and the client gets the
// answer from there.
type InternalRedirect struct {
	// Max is how many redirects one request may follow (Envoy's default,
	// 1, when 0).
	Max uint32 `json:"max,omitempty"`
	// Codes are the statuses followed (302 when none).
	Codes []uint32 `json:"codes,omitempty"`
	// CrossScheme is Never, Always or SafeOnly (https to http, not the
	// other way).
	CrossScheme string `json:"crossScheme,omitempty"`
	// DenyRepeated refuses to follow a redirect to a route a previous
	// redirect from this route went to.
	DenyRepeated bool `json:"denyRepeated,omitempty"`
}

// Session is a route's session persistence: Envoy's stateful session
// filter names the endpoint a session started on in a cookie or a header,
// and sends the session's later requests there while it is healthy.
type Session struct {
	// Exactly one of Cookie and Header names where the session is kept.
	Cookie string `json:"cookie,omitempty"`
	Header string `json:"header,omitempty"` // lower case
	// TTL is a permanent cookie's lifetime (Max-Age); zero makes a cookie
	// that ends with the browser's session.
	TTL time.Duration `json:"ttl,omitempty"`
}

// HashPolicy is one input of a request's hash: a header, a query
// parameter, the client's address or a cookie, when the request has it.
// The inputs a request has are combined in order, up to a Terminal one.
type HashPolicy struct {
	Header         string `json:"header,omitempty"` // lower case
	QueryParameter string `json:"queryParameter,omitempty"`
	SourceIP       bool   `json:"sourceIP,omitempty"`
	// Cookie hashes a cookie, which Envoy sets for the session (on the
	// response) when the request has none.
	Cookie   *CookieHash `json:"cookie,omitempty"`
	Terminal bool        `json:"terminal,omitempty"`
}

// CookieHash is the cookie a request is hashed by.
type CookieHash struct {
	Name string `json:"name"`
	Path string `json:"path,omitempty"`
}

// IPFilter lets in only the requests whose client address a rule matches
// (Allow), or keeps those out; Envoy answers the others 403.
type IPFilter struct {
	Allow bool     `json:"allow,omitempty"`
	Rules []IPRule `json:"rules"`
}

// IPRule matches client addresses in a range.
type IPRule struct {
	// CIDR is the range, its address masked ("10.0.0.0/8"; a single
	// address is a /32 or /128).
	CIDR string `json:"cidr"`
	// Remote matches the client's address as the connection manager
	// trusts it (the X-Forwarded-For address xff_num_trusted_hops
	// points at), not the connection's peer.
	Remote bool `json:"remote,omitempty"`
}

// CORS answers preflight requests and adds CORS headers. Origins are exact
// or contain "*" wildcards ("https://*.example.com", "*").
type CORS struct {
	AllowOrigins     []string `json:"allowOrigins,omitempty"`
	AllowMethods     []string `json:"allowMethods,omitempty"`
	AllowHeaders     []string `json:"allowHeaders,omitempty"`
	ExposeHeaders    []string `json:"exposeHeaders,omitempty"`
	AllowCredentials bool     `json:"allowCredentials,omitempty"`
	MaxAgeSeconds    int32    `json:"maxAgeSeconds,omitempty"`
	// AllowOriginRegexes are origins allowed by a whole-value RE2 match
	// (HTTPProxy's corsPolicy takes them).
	AllowOriginRegexes []string `json:"allowOriginRegexes,omitempty"`
	// MaxAgeZero answers preflights with Access-Control-Max-Age: 0, so
	// that browsers do not cache them (MaxAgeSeconds is then 0).
	MaxAgeZero bool `json:"maxAgeZero,omitempty"`
	// AllowPrivateNetwork answers a preflight that asks to reach a
	// private network (Access-Control-Request-Private-Network) with
	// Access-Control-Allow-Private-Network: true.
	AllowPrivateNetwork bool `json:"allowPrivateNetwork,omitempty"`
	// OriginsIgnoreCase compares AllowOrigins without regard to case, and
	// ForwardPreflights forwards a preflight from an origin not allowed
	// to the backend rather than answering it without CORS headers: an
	// HTTPProxy's corsPolicy, as Contour configures Envoy's filter.
	OriginsIgnoreCase bool `json:"originsIgnoreCase,omitempty"`
	ForwardPreflights bool `json:"forwardPreflights,omitempty"`
}

// Mirror is a cluster that gets a copy of Percent per cent of the requests.
type Mirror struct {
	Cluster string  `json:"cluster"`
	Percent float64 `json:"percent"`
}

// Retry retries failed requests.
type Retry struct {
	Attempts int           `json:"attempts"`
	Codes    []uint32      `json:"codes,omitempty"`
	Backoff  time.Duration `json:"backoff,omitempty"`
	// On are the failures retried, Envoy's retry_on conditions; none
	// means connection failures, refused streams, resets and, with
	// Codes, those statuses (the Gateway API's HTTPRouteRetry).
	On []string `json:"on,omitempty"`
}

// PathMatchType is how a path is compared.
type PathMatchType string

const (
	PathExact  PathMatchType = "Exact"
	PathPrefix PathMatchType = "Prefix" // by path segments, as the Gateway API defines it
	// PathStringPrefix is a prefix of the path as a string ("/foo" matches
	// "/foobar"), as Contour's HTTPProxy defines it.
	PathStringPrefix PathMatchType = "StringPrefix"
	PathRegex        PathMatchType = "Regex"
)

// Match is a conjunction: every part must match.
type Match struct {
	PathType    PathMatchType `json:"pathType"`
	Path        string        `json:"path"`
	Method      string        `json:"method,omitempty"`
	Headers     []StringMatch `json:"headers,omitempty"`
	QueryParams []StringMatch `json:"queryParams,omitempty"`
}

// StringMatch matches a named header or query parameter.
type StringMatch struct {
	Name  string `json:"name"`
	Value string `json:"value"`
	Regex bool   `json:"regex,omitempty"`
	// Present matches a header that is there, whatever its value (Value
	// and Regex unused); headers only.
	Present bool `json:"present,omitempty"`
	// Invert matches what the match does not: a header that is missing,
	// or whose value does not match (HTTPProxy's notpresent, notexact,
	// notcontains); headers only. A missing header matches an inverted
	// value match only with MissingAsEmpty, as the empty value.
	Invert         bool `json:"invert,omitempty"`
	MissingAsEmpty bool `json:"missingAsEmpty,omitempty"`
}

// Destination splits traffic between weighted backends.
type Destination struct {
	Backends []WeightedCluster `json:"backends"`
}

// WeightedCluster is a share of traffic. An Invalid share (its backendRef
// did not resolve) is answered with HTTP 500, as the Gateway API asks.
type WeightedCluster struct {
	Cluster string `json:"cluster,omitempty"`
	Weight  uint32 `json:"weight"`
	Invalid bool   `json:"invalid,omitempty"`
	// RequestHeaders and ResponseHeaders apply to this backend's share
	// only (a backendRef's filters).
	RequestHeaders  *HeaderModifier `json:"requestHeaders,omitempty"`
	ResponseHeaders *HeaderModifier `json:"responseHeaders,omitempty"`
	// CookieRewrites change the attributes of the cookies this backend
	// sets (its responses' Set-Cookie headers), by cookie name.
	CookieRewrites []CookieRewrite `json:"cookieRewrites,omitempty"`
	// Hostname rewrites the host of this backend's share, over the
	// route's rewrite (an HTTPProxy service's Host).
	Hostname string `json:"hostname,omitempty"`
}

// CookieRewrite changes the attributes of a cookie a backend sets: its
// Path and Domain are replaced (or added), Secure added or removed, and
// SameSite replaced (or added), where set.
type CookieRewrite struct {
	Name     string `json:"name"`
	Path     string `json:"path,omitempty"`
	Domain   string `json:"domain,omitempty"`
	Secure   *bool  `json:"secure,omitempty"`
	SameSite string `json:"sameSite,omitempty"`
}

// Redirect answers with a redirect; unset fields keep the request's value.
type Redirect struct {
	Scheme     string `json:"scheme,omitempty"`
	Hostname   string `json:"hostname,omitempty"`
	Port       uint32 `json:"port,omitempty"`
	FullPath   string `json:"fullPath,omitempty"`
	PrefixPath string `json:"prefixPath,omitempty"` // replaces the matched prefix
	// HasPath says FullPath or PrefixPath is set (either may be empty or "/").
	HasPath    bool `json:"hasPath,omitempty"`
	StatusCode int  `json:"statusCode"`
}

// DirectResponse answers without a backend.
type DirectResponse struct {
	Status uint32 `json:"status"`
	Body   string `json:"body,omitempty"`
}

// HeaderModifier changes headers: Set replaces, Add appends, Remove removes.
type HeaderModifier struct {
	Set    []Header `json:"set,omitempty"`
	Add    []Header `json:"add,omitempty"`
	Remove []string `json:"remove,omitempty"`
}

// Header is a name and value.
type Header struct {
	Name  string `json:"name"`
	Value string `json:"value"`
	// Formatted says Value is an Envoy header format string whose
	// "%...%" command operators Envoy substitutes (HTTPProxy's dynamic
	// header values); otherwise it is literal.
	Formatted bool `json:"formatted,omitempty"`
}

// Rewrite changes the request before it is forwarded.
type Rewrite struct {
	Hostname string `json:"hostname,omitempty"`
	// HostnameHeader rewrites the host to the value of this request
	// header, when the request has it (HTTPProxy's Host: %REQ(name)%).
	HostnameHeader string `json:"hostnameHeader,omitempty"`
	FullPath       string `json:"fullPath,omitempty"`
	PrefixPath     string `json:"prefixPath,omitempty"`
	HasPath        bool   `json:"hasPath,omitempty"`
}

// Cluster is a backend: a Service port and its ready endpoints.
type Cluster struct {
	// Name is "<namespace>/<service>/<port>".
	Name string `json:"name"`
	// HTTP2 says the backend speaks cleartext HTTP/2 (appProtocol h2c or
	// kubernetes.io/h2c), so Envoy must too.
	HTTP2 bool `json:"http2,omitempty"`
	// UDP says the Service port is UDP.
	UDP bool `json:"udp,omitempty"`
	// TLS, when set, is how Envoy connects to the backend over TLS
	// (BackendTLSPolicy).
	TLS *UpstreamTLS `json:"tls,omitempty"`
	// IdleTimeout closes a connection to a backend idle that long
	// (HTTPProxy's timeoutPolicy.idleConnection); 0 is Envoy's default,
	// negative never closes one.
	IdleTimeout time.Duration `json:"idleTimeout,omitempty"`
	// LoadBalancer is how Envoy spreads requests over the endpoints:
	// "" (round robin, Envoy's default), LeastRequest or Random.
	LoadBalancer LoadBalancer `json:"loadBalancer,omitempty"`
	// SlowStart ramps a new endpoint's share of requests up (zero: none).
	SlowStart SlowStart `json:"slowStart,omitzero"`
	// CircuitBreakers limit the traffic Envoy sends the cluster.
	CircuitBreakers CircuitBreakers `json:"circuitBreakers,omitzero"`
	// HealthCheck, when set, is how Envoy checks each endpoint; it sends
	// no request to one that fails, and none at all when all fail.
	HealthCheck *HealthCheck `json:"healthCheck,omitempty"`
	// DNS says the Endpoints are host names Envoy resolves (an
	// ExternalName Service's), rather than addresses EDS sends.
	DNS bool `json:"dns,omitempty"`
	// DNSFamily is which addresses of the names Envoy uses: "" (Envoy's
	// default, IPv6 first, else IPv4), "v4" or "v6" only.
	DNSFamily string     `json:"dnsFamily,omitempty"`
	Endpoints []Endpoint `json:"endpoints,omitempty"` // ordered
	// Source is the Service port the endpoints come from, so that they can
	// be recomputed alone when only EndpointSlices change.
	Source ClusterSource `json:"-"`
	// Shares, when set, make the cluster several Service ports' endpoints,
	// each share a locality with its weight, in place of Source and
	// Endpoints: Envoy's UDP proxy routes to one cluster, so a UDPRoute's
	// weighted backends become one cluster with locality weights.
	Shares []Share `json:"shares,omitempty"`
}

// Share is one backend's part of a cluster with Shares.
type Share struct {
	// Cluster is the backend's own cluster name, for reading.
	Cluster   string        `json:"cluster"`
	Weight    uint32        `json:"weight"`
	Endpoints []Endpoint    `json:"endpoints,omitempty"`
	Source    ClusterSource `json:"-"`
}

// ClusterSource names a Service port: its namespace, Service, the port's
// name (which EndpointSlice ports match) and protocol.
type ClusterSource struct {
	Namespace, Service, PortName, Protocol string
	// HealthPortName names the Service port health checks go to, when
	// not PortName's.
	HealthPortName string
}

// Endpoint is an address and port of a ready backend, and the port
// Envoy's health checks go to when it is another (0: Port).
type Endpoint struct {
	Address    string `json:"address"`
	Port       uint32 `json:"port"`
	HealthPort uint32 `json:"healthPort,omitempty"`
}

// Secret is a certificate chain and its private key, in PEM.
type Secret struct {
	// Name is "<namespace>/<secret>".
	Name        string `json:"name"`
	Certificate []byte `json:"-"`
	PrivateKey  []byte `json:"-"`
}

// UpstreamTLS is TLS from Envoy to a backend: the server name to send and
// how to verify the backend's certificate.
type UpstreamTLS struct {
	SNI string `json:"sni"`
	// Unverified accepts any certificate the backend presents: an
	// HTTPProxy service of protocol tls or h2 without validation, as in
	// Contour. Every other TLS backend is verified.
	Unverified bool `json:"unverified,omitempty"`
	// CA is a PEM bundle of trusted certificates; SystemCA trusts the
	// Envoy image's system bundle instead.
	CA       []byte `json:"-"`
	SystemCA bool   `json:"systemCA,omitempty"`
	// SubjectAltNames the certificate must present one of; the SNI when
	// empty.
	SubjectAltNames []SubjectAltName `json:"subjectAltNames,omitempty"`
	// ClientCertificate names the Secret in Gateway.Secrets Envoy presents
	// to the backend (the Gateway's spec.tls.backend); none when empty.
	ClientCertificate string `json:"clientCertificate,omitempty"`
}

// SubjectAltName is a DNS name or a URI.
type SubjectAltName struct {
	Type  string `json:"type"` // "DNS" or "URI"
	Value string `json:"value"`
}

// ChainTLS is what an HTTPProxy root's TLS virtual host asks of its filter chain
// beyond its certificate: TLS versions ("" for the fleet's), the
// validation of clients' certificates and what of them goes upstream, a
// tcpproxy instead of routes, and the fallback certificate's chain.
type ChainTLS struct {
	MinTLS, MaxTLS string
	Validation     *ClientValidation
	// TCP is where the tcpproxy sends the virtual host's connections,
	// instead of routing their requests.
	TCP *Destination
	// Fallback serves the virtual host to clients without a server name
	// too, on the chain that takes them (enableFallbackCertificate).
	Fallback bool
	// Forward sends the details of clients' certificates upstream
	// (clientValidation.forwardClientCertificate).
	Forward *ForwardClientCert
}

// HealthCheck is how Envoy checks each endpoint of a cluster: every
// Interval, an HTTP request (HTTP) or else a TCP connection that must
// succeed within Timeout. Unhealthy failures in a row take a healthy
// endpoint out, Healthy successes bring it back; a new endpoint is in
// from its first success.
type HealthCheck struct {
	HTTP      *HTTPHealthCheck `json:"http,omitempty"`
	Interval  time.Duration    `json:"interval"`
	Timeout   time.Duration    `json:"timeout"`
	Unhealthy uint32           `json:"unhealthy"`
	Healthy   uint32           `json:"healthy"`
}

// HTTPHealthCheck is a health check's request: GET Path with Host; an
// answer with a status in ExpectedStatuses ([200, 201) when none) is a
// success.
type HTTPHealthCheck struct {
	Path             string        `json:"path"`
	Host             string        `json:"host"`
	ExpectedStatuses []StatusRange `json:"expectedStatuses,omitempty"`
}

// StatusRange is the HTTP statuses from Start up to, not including, End.
type StatusRange struct {
	Start int64 `json:"start"`
	End   int64 `json:"end"`
}

// Key is the health check written out: equal checks have equal keys.
func (h *HealthCheck) Key() string {
	k := fmt.Sprintf("%s,%s,%d,%d", h.Interval, h.Timeout, h.Unhealthy, h.Healthy)
	if h.HTTP != nil {
		k += ",http:" + h.HTTP.Host + h.HTTP.Path
		for _, r := range h.HTTP.ExpectedStatuses {
			k += fmt.Sprintf(",%d-%d", r.Start, r.End)
		}
	}
	return k
}
