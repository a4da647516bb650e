package v1alpha1

import (
	contourv1 "github.com/projectcontour/contour/apis/projectcontour/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// RuntimeSettings configure the per-Gateway controller: how it batches
// changes and what Envoy configuration it generates beyond what the Gateway
// API expresses. The operator passes them to the controller; applying a
// change restarts the controller pods, never Envoy.
//
// Durations are Go durations ("250ms", "1m30s"); where a timeout can be
// turned off, "0s" does so.
type RuntimeSettings struct {
	// XDS configures how configuration is pushed to Envoy.
	// +kubebuilder:default={}
	// +optional
	XDS XDSSettings `json:"xds,omitempty"`

	// HTTP configures Envoy's HTTP connection managers.
	// +kubebuilder:default={}
	// +optional
	HTTP HTTPSettings `json:"http,omitempty"`

	// Timeouts that apply to every listener and upstream.
	// +kubebuilder:default={}
	// +optional
	Timeouts TimeoutSettings `json:"timeouts,omitempty"`

	// TLS holds the defaults for TLS listeners; a Gateway listener's own
	// options do not override them.
	// +kubebuilder:default={}
	// +optional
	TLS TLSSettings `json:"tls,omitempty"`

	// AccessLog configures Envoy's access log on standard output.
	// +kubebuilder:default={}
	// +optional
	AccessLog AccessLogSettings `json:"accessLog,omitempty"`

	// Cluster holds defaults for Envoy's connections to backends, of
	// every route kind (Contour's envoy.cluster). Unset (as HTTPProxy,
	// Listener and Ingress), a profile renders as before these fields
	// existed, so that an upgrade does not roll the controllers.
	// +optional
	Cluster *ClusterSettings `json:"cluster,omitempty"`

	// Listener holds settings of every listener, of every protocol.
	// +optional
	Listener *ListenerSettings `json:"listener,omitempty"`

	// Ingress configures how the Gateway serves Ingresses.
	// +optional
	Ingress *IngressSettings `json:"ingress,omitempty"`

	// HTTPProxy configures how the Gateway serves Contour's HTTPProxies,
	// with Contour's names for the settings. Unset, it is the defaults
	// (and a profile without it renders as before it existed, so an
	// upgrade does not roll the controllers).
	// +optional
	HTTPProxy *HTTPProxySettings `json:"httpproxy,omitempty"`

	// Tracing sends a span of every sampled request, of any route kind, to
	// an OpenTelemetry collector, as Contour's tracing does: Envoy's
	// OpenTelemetry tracer on every HTTP connection manager. Unset, Envoy
	// traces nothing.
	// +optional
	Tracing *TracingSettings `json:"tracing,omitempty"`

	// GlobalExtAuth makes Envoy ask one authorization server about every
	// request of every HTTP route of the Gateway, as Contour's
	// globalExtAuth does. Unset, only the routes that name a server of
	// their own are checked.
	// +optional
	GlobalExtAuth *GlobalExtAuthSettings `json:"globalExtAuth,omitempty"`
}

// TracingSettings are Contour's tracing settings.
type TracingSettings struct {
	// ExtensionService is the ExtensionService (projectcontour.io/v1alpha1)
	// of the OpenTelemetry collector, which Envoy sends spans to over
	// OTLP/gRPC.
	ExtensionService ObjectReference `json:"extensionService"`

	// ServiceName is the service.name of the spans' resource.
	// +kubebuilder:default=contour
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[^\x00-\x1f\x7f]*$`
	// +optional
	ServiceName string `json:"serviceName,omitempty"`

	// OverallSampling is the percentage of requests traced, a decimal
	// from 0 to 100.
	// +kubebuilder:default="100"
	// +kubebuilder:validation:Pattern=`^(100(\.0+)?|[0-9]{1,2}(\.[0-9]+)?)$`
	// +optional
	OverallSampling string `json:"overallSampling,omitempty"`

	// ClientSampling is the percentage of requests with an
	// x-client-trace-id header that are traced (before overallSampling),
	// a decimal from 0 to 100; 100 when unset, as in Envoy.
	// +kubebuilder:validation:Pattern=`^(100(\.0+)?|[0-9]{1,2}(\.[0-9]+)?)$`
	// +optional
	ClientSampling string `json:"clientSampling,omitempty"`

	// RandomSampling is the percentage of the other requests that are
	// traced (before overallSampling), chosen by their x-request-id; 100
	// when unset, as in Envoy.
	// +kubebuilder:validation:Pattern=`^(100(\.0+)?|[0-9]{1,2}(\.[0-9]+)?)$`
	// +optional
	RandomSampling string `json:"randomSampling,omitempty"`

	// MaxPathTagLength is how much of the request's URL the http.url
	// attribute keeps.
	// +kubebuilder:default=256
	// +kubebuilder:validation:Minimum=1
	// +optional
	MaxPathTagLength uint32 `json:"maxPathTagLength,omitempty"`

	// IncludePodDetail adds the Envoy Pod's name and namespace to every
	// span (podName, podNamespaceName), as Contour does.
	// +optional
	IncludePodDetail bool `json:"includePodDetail,omitempty"`

	// CustomTags are attributes every span carries: a literal value, or
	// the value of a request header (none when the request lacks it).
	// +kubebuilder:validation:MaxItems=32
	// +optional
	CustomTags []CustomTag `json:"customTags,omitempty"`
}

// CustomTag is one attribute of every span: exactly one of Literal and
// RequestHeaderName gives its value.
// +kubebuilder:validation:XValidation:rule="has(self.literal) != has(self.requestHeaderName)",message="exactly one of literal and requestHeaderName"
type CustomTag struct {
	// TagName is the span attribute's name.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[^\x00-\x1f\x7f]*$`
	TagName string `json:"tagName"`
	// Literal is the attribute's value.
	// +kubebuilder:validation:MaxLength=4096
	// +kubebuilder:validation:Pattern=`^[^\x00-\x1f\x7f]*$`
	// +optional
	Literal string `json:"literal,omitempty"`
	// RequestHeaderName names the request header whose first value is the
	// attribute's; a request without the header has no such attribute.
	// +kubebuilder:validation:MaxLength=256
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9!#$%&'*+.^_|~-]+$`
	// +optional
	RequestHeaderName string `json:"requestHeaderName,omitempty"`
}

// HTTPProxyOrDefault is the HTTPProxy settings, the defaults when none
// are set: every reader of the profile takes them alike.
func (rs *RuntimeSettings) HTTPProxyOrDefault() HTTPProxySettings {
	if rs.HTTPProxy == nil {
		return HTTPProxySettings{}
	}
	return *rs.HTTPProxy
}

// HTTPProxySettings are Contour's settings for HTTPProxy.
type HTTPProxySettings struct {
	// RootNamespaces are the namespaces root HTTPProxies (those with a
	// virtualhost) may be in; a root elsewhere is invalid. Empty allows
	// every namespace. Contour's httpproxy.rootNamespaces: it keeps teams
	// from claiming hostnames outside the namespaces a platform team
	// chose.
	// +listType=set
	// +optional
	RootNamespaces []string `json:"rootNamespaces,omitempty"`

	// DisablePermitInsecure ignores permitInsecure on the routes of TLS
	// virtual hosts: their plain HTTP requests are always redirected to
	// HTTPS. Contour's httpproxy.disablePermitInsecure.
	// +optional
	DisablePermitInsecure bool `json:"disablePermitInsecure,omitempty"`

	// EnableExternalNameService lets HTTPProxy services be ExternalName
	// Services, which Envoy reaches by resolving their external name.
	// Off by default, as in Contour (enableExternalNameService): an
	// ExternalName Service can name any host, the API server's or a
	// cloud metadata service included, and a route to it would let
	// whoever writes HTTPProxies reach that host through Envoy
	// (CVE-2021-25740). Off, a route to one is an error on the proxy.
	// +optional
	EnableExternalNameService bool `json:"enableExternalNameService,omitempty"`

	// FallbackCertificate is the Secret presented to TLS clients that
	// send no server name, on the filter chain of the Gateway's
	// ingress-https listener (which must have no hostname), and the
	// HTTPProxies with virtualhost.tls.enableFallbackCertificate are
	// served to those clients too. Contour's httpproxy.fallbackCertificate;
	// as there, a TLSCertificateDelegation must delegate it to the
	// namespace of each such proxy that is not its own. Unset, such a
	// proxy is invalid (FallbackNotPresent).
	// +optional
	FallbackCertificate *SecretReference `json:"fallbackCertificate,omitempty"`

	// RateLimitService is the global rate limit service, Contour's
	// rateLimitService: the Gateway's Envoys ask it, over Envoy's gRPC
	// rate limit protocol (envoy.service.ratelimit.v3), about each request
	// of an HTTPProxy virtual host or route with rateLimitPolicy.global
	// descriptors, and answer 429 to those it limits. Unset, such
	// descriptors take no effect, and the proxy warns.
	// envoyproxy/ratelimit is a service that fits.
	// +optional
	RateLimitService *RateLimitServiceSettings `json:"rateLimitService,omitempty"`

	// Policy sets and removes headers on the requests and responses of
	// every HTTPProxy service, and with applyToIngress of every Ingress
	// backend (Contour's policy): a header a service's own policy sets
	// keeps the service's value; removals add up. A Host in
	// requestHeaders.set rewrites the host of services that do not.
	// +optional
	Policy *GlobalHeadersPolicy `json:"policy,omitempty"`
}

// GlobalHeadersPolicy is Contour's policy: default header changes for
// every service.
type GlobalHeadersPolicy struct {
	// +optional
	RequestHeaders *HeadersPolicy `json:"requestHeaders,omitempty"`
	// +optional
	ResponseHeaders *HeadersPolicy `json:"responseHeaders,omitempty"`
	// ApplyToIngress applies the policy to Ingresses' backends too.
	// +optional
	ApplyToIngress bool `json:"applyToIngress,omitempty"`
}

// HeadersPolicy sets and removes headers.
type HeadersPolicy struct {
	// Set are header names and the values they get; a value may hold
	// Contour's dynamic values (%CONTOUR_NAMESPACE%, %REQ(name)%, ...).
	// +kubebuilder:validation:MaxProperties=64
	// +kubebuilder:validation:XValidation:rule="self.all(k, k.matches('^[A-Za-z0-9!#$&*+.^_|~-]+$'))",message="header names are HTTP tokens"
	// +optional
	Set map[string]string `json:"set,omitempty"`
	// Remove are header names to remove.
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:Pattern=`^[A-Za-z0-9!#$&*+.^_|~-]+$`
	// +listType=set
	// +optional
	Remove []string `json:"remove,omitempty"`
}

// RateLimitServiceSettings are Contour's rateLimitService settings.
type RateLimitServiceSettings struct {
	// ExtensionService is the ExtensionService (projectcontour.io/v1alpha1)
	// of the rate limit service.
	ExtensionService ObjectReference `json:"extensionService"`

	// Domain is the domain the service's limits are configured under.
	// +kubebuilder:default=contour
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[^\x00-\x1f\x7f]*$`
	// +optional
	Domain string `json:"domain,omitempty"`

	// FailOpen lets requests through when the service cannot be asked
	// (no endpoint, no answer within the ExtensionService's response
	// timeout); without it Envoy answers them 500.
	// +optional
	FailOpen bool `json:"failOpen,omitempty"`

	// EnableXRateLimitHeaders adds the x-ratelimit-limit,
	// x-ratelimit-remaining and x-ratelimit-reset headers of the IETF
	// draft (version 03) to the responses of the requests asked about.
	// +optional
	EnableXRateLimitHeaders bool `json:"enableXRateLimitHeaders,omitempty"`

	// EnableResourceExhaustedCode answers a limited gRPC request with
	// RESOURCE_EXHAUSTED instead of UNAVAILABLE.
	// +optional
	EnableResourceExhaustedCode bool `json:"enableResourceExhaustedCode,omitempty"`

	// DefaultGlobalRateLimitPolicy applies to the HTTPProxy virtual hosts
	// without a global policy of their own, unless theirs is disabled.
	// +optional
	DefaultGlobalRateLimitPolicy *contourv1.GlobalRateLimitPolicy `json:"defaultGlobalRateLimitPolicy,omitempty"`
}

// ObjectReference names a namespaced object.
type ObjectReference struct {
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:MinLength=1
	Namespace string `json:"namespace"`
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
}

// SecretReference names a Secret.
type SecretReference struct {
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:MinLength=1
	Namespace string `json:"namespace"`
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
}

// XDSSettings batch changes into pushes. A change after updateDelay of quiet
// is pushed at once; the changes that follow it within updateDelay wait
// until changes have been quiet for updateDelay; under a steady stream of
// changes the controller pushes at least every maxUpdateDelay.
// +kubebuilder:validation:XValidation:rule="!has(self.updateDelay) || !has(self.maxUpdateDelay) || duration(self.updateDelay) <= duration(self.maxUpdateDelay)",message="updateDelay must not be longer than maxUpdateDelay"
type XDSSettings struct {
	// +kubebuilder:default="100ms"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|ms|s|m|h))+$`
	// +optional
	UpdateDelay *metav1.Duration `json:"updateDelay,omitempty"`

	// +kubebuilder:default="1s"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|ms|s|m|h))+$`
	// +kubebuilder:validation:XValidation:rule="duration(self) <= duration('60s')",message="maxUpdateDelay must be at most 60s"
	// +optional
	MaxUpdateDelay *metav1.Duration `json:"maxUpdateDelay,omitempty"`
}

// HTTPSettings configure Envoy's HTTP connection managers.
type HTTPSettings struct {
	// NumTrustedHops is how many proxies in front of Envoy append to
	// X-Forwarded-For; Envoy takes the client address from that position.
	// +kubebuilder:default=0
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=16
	// +optional
	NumTrustedHops *int32 `json:"numTrustedHops,omitempty"`

	// ServerHeader is what Envoy does with the Server response header:
	// Overwrite it with "envoy", AppendIfAbsent, or PassThrough the
	// backend's.
	// +kubebuilder:default=Overwrite
	// +kubebuilder:validation:Enum=Overwrite;AppendIfAbsent;PassThrough
	// +optional
	ServerHeader string `json:"serverHeader,omitempty"`

	// MergeSlashes collapses repeated slashes in request paths before
	// routing, and unescapes escaped slashes (%2F, %5C) by redirecting
	// the client to the unescaped path, so that "//admin" and "/%2Fadmin"
	// meet the routes and policies of "/admin". false keeps both as the
	// client sent them (Contour's disableMergeSlashes): a path-scoped
	// policy can then be skipped by a path that a backend reads as the
	// same.
	// +kubebuilder:default=true
	// +optional
	MergeSlashes *bool `json:"mergeSlashes,omitempty"`

	// Compression is how Envoy compresses responses for clients that
	// accept it (Accept-Encoding): Gzip, Brotli, Zstd, or Disabled. Envoy
	// compresses a response of at least 30 bytes whose Content-Type is
	// text, JSON, JavaScript, XML, SVG or gRPC-Web, unless the backend
	// compressed it already or sent Cache-Control: no-transform; it drops
	// a strong ETag of a response it compresses and adds
	// Vary: Accept-Encoding to every response it could compress. Gzip is
	// Contour's default.
	// +kubebuilder:default=Gzip
	// +kubebuilder:validation:Enum=Gzip;Brotli;Zstd;Disabled
	// +optional
	Compression string `json:"compression,omitempty"`

	// StripTrailingHostDot routes a request for "app.example.com." as one
	// for "app.example.com", and forwards it without the dot (Contour's
	// strip-trailing-host-dot). Off, such a request matches no virtual
	// host but a wildcard one.
	// +optional
	StripTrailingHostDot bool `json:"stripTrailingHostDot,omitempty"`

	// AllowChunkedLength accepts an HTTP/1.1 request that has both
	// Transfer-Encoding: chunked and Content-Length, dropping the latter
	// as RFC 9112 asks; false answers it 400 (Contour's
	// disableAllowChunkedLength).
	// +kubebuilder:default=true
	// +optional
	AllowChunkedLength *bool `json:"allowChunkedLength,omitempty"`

	// MaxRequestsPerConnection closes a client connection after this many
	// requests (Contour's listener maxRequestsPerConnection). Unset, no
	// limit.
	// +kubebuilder:validation:Minimum=1
	// +optional
	MaxRequestsPerConnection *int32 `json:"maxRequestsPerConnection,omitempty"`

	// HTTP2MaxConcurrentStreams is how many streams a client may have
	// open at once on an HTTP/2 connection (Contour's
	// httpMaxConcurrentStreams). Unset, Envoy's 2147483647.
	// +kubebuilder:validation:Minimum=1
	// +optional
	HTTP2MaxConcurrentStreams *int32 `json:"http2MaxConcurrentStreams,omitempty"`

	// Versions are the HTTP versions Envoy speaks with clients (Contour's
	// defaultHTTPVersions): what it offers TLS clients in ALPN, and the
	// codec of every HTTP listener. Unset, both.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=2
	// +kubebuilder:validation:items:Enum="HTTP/1.1";"HTTP/2"
	// +listType=set
	// +optional
	Versions []string `json:"versions,omitempty"`

	// MaxRequestHeadersKiB is the largest request header block Envoy
	// accepts.
	// +kubebuilder:default=60
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=8192
	// +optional
	MaxRequestHeadersKiB *int32 `json:"maxRequestHeadersKiB,omitempty"`
}

// TimeoutSettings apply to every listener and upstream.
type TimeoutSettings struct {
	// ConnectionIdle closes a downstream connection with no active streams.
	// +kubebuilder:default="60s"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|ms|s|m|h))+$`
	// +optional
	ConnectionIdle *metav1.Duration `json:"connectionIdle,omitempty"`

	// StreamIdle resets a request that sends or receives nothing for this
	// long.
	// +kubebuilder:default="5m"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|ms|s|m|h))+$`
	// +optional
	StreamIdle *metav1.Duration `json:"streamIdle,omitempty"`

	// RequestHeaders limits how long a client may take to send its request
	// headers, against slow-header attacks; 0s turns the limit off.
	// +kubebuilder:default="10s"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|ms|s|m|h))+$`
	// +optional
	RequestHeaders *metav1.Duration `json:"requestHeaders,omitempty"`

	// MaxConnectionDuration closes downstream connections after this long;
	// unset, connections may live forever.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|ms|s|m|h))+$`
	// +optional
	MaxConnectionDuration *metav1.Duration `json:"maxConnectionDuration,omitempty"`

	// ConnectionShutdownGracePeriod is how long Envoy waits between telling
	// an HTTP/2 client to go away and closing the connection.
	// +kubebuilder:default="5s"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|ms|s|m|h))+$`
	// +optional
	ConnectionShutdownGracePeriod *metav1.Duration `json:"connectionShutdownGracePeriod,omitempty"`

	// Request limits how long a client may take to send a whole request,
	// headers and body (Contour's timeouts.request-timeout; Envoy's
	// request_timeout): Envoy answers 408 when it passes. Unset, no
	// limit.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|ms|s|m|h))+$`
	// +optional
	Request *metav1.Duration `json:"request,omitempty"`

	// DelayedClose is how long Envoy waits, after it answers and closes
	// its side, for the client to close the connection before Envoy
	// closes it (Contour's timeouts.delayed-close-timeout); 0s closes at
	// once, which may cut the answer short for a client still sending.
	// +kubebuilder:default="1s"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|ms|s|m|h))+$`
	// +optional
	DelayedClose *metav1.Duration `json:"delayedClose,omitempty"`

	// UpstreamConnect limits how long Envoy waits to connect to a backend.
	// +kubebuilder:default="2s"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|ms|s|m|h))+$`
	// +kubebuilder:validation:XValidation:rule="duration(self) > duration('0s')",message="upstreamConnect must be greater than zero"
	// +optional
	UpstreamConnect *metav1.Duration `json:"upstreamConnect,omitempty"`
}

// IngressSettings configure how the Gateway serves Ingresses.
type IngressSettings struct {
	// StatusAddress is the address the Ingresses' status gives (an IP
	// address, else a host name) instead of the Gateway's: the address
	// clients reach the fleet at when it is not the Service's, behind an
	// outer load balancer (Contour's ingress.statusAddress). Tools such
	// as external-dns read it.
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[0-9A-Za-z.:-]+$`
	// +optional
	StatusAddress string `json:"statusAddress,omitempty"`
}

// ClusterSettings are defaults for Envoy's connections to backends.
type ClusterSettings struct {
	// CircuitBreakers are the limits of every backend's cluster, where a
	// Service's own (Contour's circuit breaker annotations, a
	// BackendTrafficPolicy) do not set one (Contour's
	// circuitBreakers). Unset, Envoy's (1024 each, 3 retries).
	// +optional
	CircuitBreakers *CircuitBreakerSettings `json:"circuitBreakers,omitempty"`

	// MaxRequestsPerConnection closes a connection to a backend after
	// this many requests. Unset, no limit.
	// +kubebuilder:validation:Minimum=1
	// +optional
	MaxRequestsPerConnection *int32 `json:"maxRequestsPerConnection,omitempty"`

	// PerConnectionBufferLimitBytes is how much Envoy buffers per
	// connection to a backend. Unset, Envoy's 1 MiB.
	// +kubebuilder:validation:Minimum=1
	// +optional
	PerConnectionBufferLimitBytes *int32 `json:"perConnectionBufferLimitBytes,omitempty"`

	// DNSLookupFamily is which addresses Envoy resolves an ExternalName
	// Service's name to, where the route does not say: auto (IPv6,
	// else IPv4), v4, v6, or all.
	// +kubebuilder:validation:Enum=auto;v4;v6;all
	// +optional
	DNSLookupFamily string `json:"dnsLookupFamily,omitempty"`

	// UpstreamTLS bounds the TLS Envoy speaks to backends over TLS.
	// +optional
	UpstreamTLS *UpstreamTLSSettings `json:"upstreamTLS,omitempty"`
}

// CircuitBreakerSettings are a cluster's limits.
type CircuitBreakerSettings struct {
	// +kubebuilder:validation:Minimum=1
	// +optional
	MaxConnections *int32 `json:"maxConnections,omitempty"`
	// +kubebuilder:validation:Minimum=1
	// +optional
	MaxPendingRequests *int32 `json:"maxPendingRequests,omitempty"`
	// +kubebuilder:validation:Minimum=1
	// +optional
	MaxRequests *int32 `json:"maxRequests,omitempty"`
	// +kubebuilder:validation:Minimum=1
	// +optional
	MaxRetries *int32 `json:"maxRetries,omitempty"`
	// PerHostMaxConnections limits the connections to each endpoint.
	// +kubebuilder:validation:Minimum=1
	// +optional
	PerHostMaxConnections *int32 `json:"perHostMaxConnections,omitempty"`
}

// UpstreamTLSSettings bound the TLS Envoy speaks to backends.
// +kubebuilder:validation:XValidation:rule="!has(self.minimumVersion) || !has(self.maximumVersion) || !(self.minimumVersion == '1.3' && self.maximumVersion == '1.2')",message="minimumVersion must not be greater than maximumVersion"
type UpstreamTLSSettings struct {
	// Unset, 1.2.
	// +kubebuilder:validation:Enum="1.2";"1.3"
	// +optional
	MinimumVersion string `json:"minimumVersion,omitempty"`
	// Unset, 1.3.
	// +kubebuilder:validation:Enum="1.2";"1.3"
	// +optional
	MaximumVersion string `json:"maximumVersion,omitempty"`
	// CipherSuites for TLS 1.2, in order of preference; unset, Envoy's.
	// +kubebuilder:validation:MaxItems=16
	// +listType=set
	// +optional
	CipherSuites []CipherSuite `json:"cipherSuites,omitempty"`
}

// ListenerSettings apply to every listener.
type ListenerSettings struct {
	// PerConnectionBufferLimitBytes is how much Envoy buffers per client
	// connection; large headers and uploads stream through it.
	// +kubebuilder:default=32768
	// +kubebuilder:validation:Minimum=1024
	// +optional
	PerConnectionBufferLimitBytes *int32 `json:"perConnectionBufferLimitBytes,omitempty"`

	// UseProxyProtocol makes every TCP listener read a PROXY protocol
	// header (v1 or v2) first, and take the client's address from it, as
	// a fleet behind a load balancer that sends one (an AWS NLB with
	// proxy protocol on) needs (Contour's useProxyProtocol). A
	// connection without the header is closed: turn it on only behind
	// such a load balancer.
	// +optional
	UseProxyProtocol bool `json:"useProxyProtocol,omitempty"`

	// ConnectionBalancer Exact hands each new connection to the Envoy
	// worker thread with the fewest, instead of the kernel's choice
	// (Contour's connectionBalancer: exact): even load for few,
	// long-lived connections, at some cost per connection.
	// +kubebuilder:validation:Enum=Exact
	// +optional
	ConnectionBalancer string `json:"connectionBalancer,omitempty"`

	// SocketOptions mark the packets Envoy sends to clients (Contour's
	// socketOptions).
	// +optional
	SocketOptions *SocketOptions `json:"socketOptions,omitempty"`

	// MaxConnectionsPerListener is how many client connections each
	// Envoy holds at once on each TCP listener (Contour's
	// maxConnectionsPerListener): Envoy closes the ones beyond it as it
	// accepts them. The controller serves it to Envoy at runtime (RTDS),
	// so a change takes effect for new connections without a restart;
	// connections already open are kept.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=4294967295
	// +optional
	MaxConnectionsPerListener *int64 `json:"maxConnectionsPerListener,omitempty"`
}

// SocketOptions are IP header fields of the packets Envoy sends.
type SocketOptions struct {
	// TOS is the IPv4 Type of Service byte (DSCP and ECN).
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=255
	// +optional
	TOS *int32 `json:"tos,omitempty"`
	// TrafficClass is the IPv6 Traffic Class byte.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=255
	// +optional
	TrafficClass *int32 `json:"trafficClass,omitempty"`
}

// TLSSettings are the defaults for TLS listeners.
// +kubebuilder:validation:XValidation:rule="!has(self.minimumVersion) || !has(self.maximumVersion) || !(self.minimumVersion == '1.3' && self.maximumVersion == '1.2')",message="minimumVersion must not be greater than maximumVersion"
type TLSSettings struct {
	// +kubebuilder:default="1.2"
	// +kubebuilder:validation:Enum="1.2";"1.3"
	// +optional
	MinimumVersion string `json:"minimumVersion,omitempty"`

	// +kubebuilder:default="1.3"
	// +kubebuilder:validation:Enum="1.2";"1.3"
	// +optional
	MaximumVersion string `json:"maximumVersion,omitempty"`

	// CipherSuites for TLS 1.2, in order of preference; unset, Envoy's
	// defaults. TLS 1.3 suites are not configurable in Envoy.
	// +kubebuilder:validation:MaxItems=16
	// +listType=set
	// +optional
	CipherSuites []CipherSuite `json:"cipherSuites,omitempty"`

	// ECDHCurves are the key exchange groups TLS listeners agree to, in
	// order of preference (Envoy's ecdh_curves, Contour's ecdhCurves);
	// unset, Envoy's defaults (X25519 and P-256). A client that offers
	// none of them cannot connect.
	// +kubebuilder:validation:MaxItems=8
	// +listType=set
	// +optional
	ECDHCurves []ECDHCurve `json:"ecdhCurves,omitempty"`

	// Fingerprint has Envoy's TLS inspector compute the JA3 and JA4
	// fingerprints of each TLS client's ClientHello (Contour's
	// envoy.listener.tls.fingerprint), so that header values and access
	// log fields can carry them: %TLS_JA3_FINGERPRINT% and
	// %TLS_JA4_FINGERPRINT%. Unset, they are empty.
	// +optional
	Fingerprint *TLSFingerprint `json:"fingerprint,omitempty"`
}

// TLSFingerprint turns on the TLS inspector's fingerprints.
type TLSFingerprint struct {
	// JA3 turns on the JA3 fingerprint: the MD5 of the ClientHello's
	// version, cipher suites, extensions, groups and point formats.
	// +optional
	JA3 bool `json:"ja3,omitempty"`
	// JA4 turns on the JA4 fingerprint (FoxIO's JA4, as Envoy computes
	// it).
	// +optional
	JA4 bool `json:"ja4,omitempty"`
}

// ECDHCurve is a TLS key exchange group in BoringSSL's naming, which Envoy
// uses.
// +kubebuilder:validation:Enum=X25519MLKEM768;X25519;P-256;P-384;P-521
type ECDHCurve string

// CipherSuite is a TLS 1.2 cipher suite in BoringSSL's naming, which Envoy
// uses; "[A|B]" is an equal-preference group.
// +kubebuilder:validation:Enum="[ECDHE-ECDSA-AES128-GCM-SHA256|ECDHE-ECDSA-CHACHA20-POLY1305]";"[ECDHE-RSA-AES128-GCM-SHA256|ECDHE-RSA-CHACHA20-POLY1305]";ECDHE-ECDSA-AES128-GCM-SHA256;ECDHE-RSA-AES128-GCM-SHA256;ECDHE-ECDSA-CHACHA20-POLY1305;ECDHE-RSA-CHACHA20-POLY1305;ECDHE-ECDSA-AES256-GCM-SHA384;ECDHE-RSA-AES256-GCM-SHA384
type CipherSuite string

// AccessLogSettings configure Envoy's access log on standard output.
// +kubebuilder:validation:XValidation:rule="!has(self.textFormat) || self.format == 'Text'",message="textFormat applies only to format Text"
// +kubebuilder:validation:XValidation:rule="!has(self.jsonFields) || self.format == 'JSON'",message="jsonFields apply only to format JSON"
type AccessLogSettings struct {
	// Format of each line: Text (Envoy's command operators), JSON, or
	// Disabled for no access log.
	// +kubebuilder:default=Text
	// +kubebuilder:validation:Enum=Text;JSON;Disabled
	// +optional
	Format string `json:"format,omitempty"`

	// Level is which HTTP requests are logged (Contour's
	// accessLogLevel): Info every one, Error those answered 300 or more
	// or failed on Envoy's side (a response flag), Critical those
	// answered 500 or more or failed. TCP and UDP sessions are all
	// logged.
	// +kubebuilder:default=Info
	// +kubebuilder:validation:Enum=Info;Error;Critical
	// +optional
	Level string `json:"level,omitempty"`

	// TextFormat overrides the line format of Text, in Envoy's command
	// operators, e.g. "%REQ(:METHOD)% %REQ(:PATH)% %RESPONSE_CODE%\n".
	// Unset, Envoy's default line; for UDP, Envoy's recommended UDP
	// session line. Every '%' starts a command operator.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=4096
	// +kubebuilder:validation:Pattern=`^([^%]|%([A-Z]|[A-Z][A-Z0-9_]*[A-Z0-9])(\([^)]*\))?(:[0-9]+)?%)*$`
	// +optional
	TextFormat string `json:"textFormat,omitempty"`

	// JSONFields are the fields of JSON, each a key and a command operator
	// ("method=%REQ(:METHOD)%"); keys must differ. Unset, the fields of
	// Envoy's default text line (start_time, method, path, protocol,
	// response_code, response_flags, bytes_received, bytes_sent, duration,
	// upstream_service_time, x_forwarded_for, user_agent, request_id,
	// authority, upstream_host) and upstream_cluster and route_name.
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=256
	// +kubebuilder:validation:items:Pattern=`^[A-Za-z_][A-Za-z0-9_.-]*=([^%]|%([A-Z]|[A-Z][A-Z0-9_]*[A-Z0-9])(\([^)]*\))?(:[0-9]+)?%)+$`
	// +kubebuilder:validation:XValidation:rule="self.all(f, self.exists_one(g, g.substring(0, g.indexOf('=')) == f.substring(0, f.indexOf('='))))",message="each jsonFields key may appear once"
	// +listType=atomic
	// +optional
	JSONFields []string `json:"jsonFields,omitempty"`
}
