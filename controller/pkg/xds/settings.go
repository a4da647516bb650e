package xds

import (
	"time"

	"isobar.dev/controller/pkg/ir"
)

// Settings are the parts of the Envoy configuration that come from the
// ContourDeployment's runtimeSettings rather than from the Gateway API.
type Settings struct {
	ConnectionIdleTimeout         time.Duration
	StreamIdleTimeout             time.Duration
	RequestHeadersTimeout         time.Duration
	MaxConnectionDuration         time.Duration
	ConnectionShutdownGracePeriod time.Duration
	UpstreamConnectTimeout        time.Duration
	// RequestTimeout limits receiving a whole request (0: no limit);
	// DelayedCloseTimeout is Envoy's delayed close (its default 1s).
	RequestTimeout      time.Duration
	DelayedCloseTimeout time.Duration
	// StripTrailingHostDot routes "host." as "host".
	StripTrailingHostDot bool
	// AllowChunkedLength accepts chunked requests with a Content-Length.
	AllowChunkedLength bool
	// MaxRequestsPerConnection and HTTP2MaxConcurrentStreams limit client
	// connections; 0 is Envoy's default (no limit).
	MaxRequestsPerConnection  uint32
	HTTP2MaxConcurrentStreams uint32
	NumTrustedHops            uint32
	// MergeSlashes merges repeated slashes and unescapes escaped ones
	// (redirecting to the unescaped path); without it both stay as sent.
	MergeSlashes         bool
	MaxRequestHeadersKiB uint32
	// ListenerBufferLimit is every listener's per-connection buffer.
	ListenerBufferLimit uint32
	// ProxyProtocol makes TCP listeners read a PROXY protocol header.
	ProxyProtocol bool
	// ExactBalance balances connections over worker threads exactly.
	ExactBalance bool
	// MaxConnectionsPerListener limits each TCP listener's connections,
	// through the runtime layer; 0 is no limit.
	MaxConnectionsPerListener uint32
	// TOS and TrafficClass mark packets to clients; nil leaves them.
	TOS, TrafficClass *int32
	// Cluster are the defaults of every backend's cluster.
	Cluster ClusterDefaults
	// HTTP1 and HTTP2 are the HTTP versions Envoy speaks with clients.
	HTTP1, HTTP2 bool
	// Compression is Gzip, Brotli, Zstd or Disabled.
	Compression string
	// ECDHCurves are the TLS listeners' key exchange groups; none for
	// Envoy's defaults.
	ECDHCurves []string
	// JA3 and JA4 have the TLS inspector fingerprint each ClientHello.
	JA3, JA4 bool
	// TLSMinimumVersion and TLSMaximumVersion are "1.2" or "1.3".
	TLSMinimumVersion string
	TLSMaximumVersion string
	CipherSuites      []string
	// ServerHeader is Overwrite, AppendIfAbsent or PassThrough.
	ServerHeader string
	// AccessLog is Text, JSON or Disabled; AccessLogText is the Text line
	// (empty: Envoy's default line, for UDP the UDP proxy's recommended
	// one) and AccessLogJSON the JSON fields, "key=operators".
	AccessLog     string
	AccessLogText string
	// AccessLogLevel is Info, Error or Critical: which HTTP requests
	// are logged.
	AccessLogLevel string
	AccessLogJSON  []string
	// RateLimit is the Gateway's rate limit service (the IR's, set for
	// each translation): connection managers have Envoy's rate limit
	// filter only with one.
	RateLimit *ir.RateLimitService
	// Tracing is the Gateway's tracer (the IR's, set for each
	// translation); nil traces nothing.
	Tracing *ir.Tracing
	// ExtAuthHeaders are the Gateway's lists of headers external
	// authorization checks carry: every connection manager has an
	// ext_authz filter for each (ir.Gateway.ExtAuthHeaders).
	ExtAuthHeaders [][]string
}

// DefaultSettings are the ContourDeployment's defaults.
func DefaultSettings() Settings {
	return Settings{
		ConnectionIdleTimeout:         60 * time.Second,
		StreamIdleTimeout:             5 * time.Minute,
		RequestHeadersTimeout:         10 * time.Second,
		ConnectionShutdownGracePeriod: 5 * time.Second,
		UpstreamConnectTimeout:        2 * time.Second,
		DelayedCloseTimeout:           time.Second,
		AllowChunkedLength:            true,
		MaxRequestHeadersKiB:          60,
		MergeSlashes:                  true,
		Compression:                   "Gzip",
		HTTP1:                         true,
		HTTP2:                         true,
		ListenerBufferLimit:           32768,
		TLSMinimumVersion:             "1.2",
		TLSMaximumVersion:             "1.3",
		ServerHeader:                  "Overwrite",
		AccessLog:                     "Text",
	}
}

// ClusterDefaults are the profile's runtimeSettings.cluster: what every
// backend's cluster gets where its own configuration says nothing.
type ClusterDefaults struct {
	CircuitBreakers          ir.CircuitBreakers
	MaxRequestsPerConnection uint32
	// BufferLimit is the per-connection buffer; 0 is Envoy's.
	BufferLimit uint32
	// DNSFamily is auto, v4, v6 or all; "" is auto.
	DNSFamily string
	// TLSMinimumVersion and TLSMaximumVersion bound upstream TLS ("1.2",
	// "1.3"); CipherSuites are its TLS 1.2 suites.
	TLSMinimumVersion, TLSMaximumVersion string
	CipherSuites                         []string
}
