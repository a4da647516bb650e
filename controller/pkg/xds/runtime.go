package xds

import (
	"fmt"

	"k8s.io/utils/ptr"

	"isobar.dev/api/accesslog"
	"isobar.dev/api/v1alpha1"
)

// FromRuntime applies a ContourDeployment's runtimeSettings over the
// defaults; what it leaves unset keeps its default.
func FromRuntime(rs v1alpha1.RuntimeSettings) (Settings, error) {
	s := DefaultSettings()
	t := rs.Timeouts
	if t.ConnectionIdle != nil {
		s.ConnectionIdleTimeout = t.ConnectionIdle.Duration
	}
	if t.StreamIdle != nil {
		s.StreamIdleTimeout = t.StreamIdle.Duration
	}
	if t.RequestHeaders != nil {
		s.RequestHeadersTimeout = t.RequestHeaders.Duration
	}
	if t.MaxConnectionDuration != nil {
		s.MaxConnectionDuration = t.MaxConnectionDuration.Duration
	}
	if t.ConnectionShutdownGracePeriod != nil {
		s.ConnectionShutdownGracePeriod = t.ConnectionShutdownGracePeriod.Duration
	}
	if t.UpstreamConnect != nil {
		s.UpstreamConnectTimeout = t.UpstreamConnect.Duration
	}
	if t.Request != nil {
		s.RequestTimeout = t.Request.Duration
	}
	if t.DelayedClose != nil {
		s.DelayedCloseTimeout = t.DelayedClose.Duration
	}
	h := rs.HTTP
	s.StripTrailingHostDot = h.StripTrailingHostDot
	if h.AllowChunkedLength != nil {
		s.AllowChunkedLength = *h.AllowChunkedLength
	}
	if v := h.MaxRequestsPerConnection; v != nil {
		if *v < 1 {
			return s, fmt.Errorf("runtimeSettings.http.maxRequestsPerConnection %d is not positive", *v)
		}
		s.MaxRequestsPerConnection = uint32(*v)
	}
	if v := h.HTTP2MaxConcurrentStreams; v != nil {
		if *v < 1 {
			return s, fmt.Errorf("runtimeSettings.http.http2MaxConcurrentStreams %d is not positive", *v)
		}
		s.HTTP2MaxConcurrentStreams = uint32(*v)
	}
	if h.NumTrustedHops != nil {
		if *h.NumTrustedHops < 0 {
			return s, fmt.Errorf("runtimeSettings.http.numTrustedHops %d is negative", *h.NumTrustedHops)
		}
		s.NumTrustedHops = uint32(*h.NumTrustedHops)
	}
	if h.MergeSlashes != nil {
		s.MergeSlashes = *h.MergeSlashes
	}
	if len(h.Versions) > 0 {
		s.HTTP1, s.HTTP2 = false, false
		for _, v := range h.Versions {
			switch v {
			case "HTTP/1.1":
				s.HTTP1 = true
			case "HTTP/2":
				s.HTTP2 = true
			default:
				return s, fmt.Errorf("runtimeSettings.http.versions: %q is not HTTP/1.1 or HTTP/2", v)
			}
		}
	}
	if h.MaxRequestHeadersKiB != nil {
		s.MaxRequestHeadersKiB = uint32(*h.MaxRequestHeadersKiB)
	}
	listener := ptr.Deref(rs.Listener, v1alpha1.ListenerSettings{})
	if v := listener.PerConnectionBufferLimitBytes; v != nil {
		if *v < 1024 {
			return s, fmt.Errorf("runtimeSettings.listener.perConnectionBufferLimitBytes %d is below 1024", *v)
		}
		s.ListenerBufferLimit = uint32(*v)
	}
	s.ProxyProtocol = listener.UseProxyProtocol
	switch listener.ConnectionBalancer {
	case "":
	case "Exact":
		s.ExactBalance = true
	default:
		return s, fmt.Errorf("runtimeSettings.listener.connectionBalancer %q is not Exact", listener.ConnectionBalancer)
	}
	if v := listener.MaxConnectionsPerListener; v != nil {
		if *v < 1 || *v > 1<<32-1 {
			return s, fmt.Errorf("runtimeSettings.listener.maxConnectionsPerListener %d is not between 1 and 4294967295", *v)
		}
		s.MaxConnectionsPerListener = uint32(*v)
	}
	if o := listener.SocketOptions; o != nil {
		for name, v := range map[string]*int32{"tos": o.TOS, "trafficClass": o.TrafficClass} {
			if v != nil && (*v < 0 || *v > 255) {
				return s, fmt.Errorf("runtimeSettings.listener.socketOptions.%s %d is not a byte", name, *v)
			}
		}
		s.TOS, s.TrafficClass = o.TOS, o.TrafficClass
	}
	if err := clusterDefaults(ptr.Deref(rs.Cluster, v1alpha1.ClusterSettings{}), &s.Cluster); err != nil {
		return s, err
	}
	if f := rs.TLS.Fingerprint; f != nil {
		s.JA3, s.JA4 = f.JA3, f.JA4
	}
	if v := rs.TLS.MinimumVersion; v != "" {
		s.TLSMinimumVersion = v
	}
	if v := rs.TLS.MaximumVersion; v != "" {
		s.TLSMaximumVersion = v
	}
	for _, c := range rs.TLS.CipherSuites {
		s.CipherSuites = append(s.CipherSuites, string(c))
	}
	for _, c := range rs.TLS.ECDHCurves {
		s.ECDHCurves = append(s.ECDHCurves, string(c))
	}
	if v := h.Compression; v != "" {
		if _, ok := compressors[v]; !ok {
			return s, fmt.Errorf("runtimeSettings.http.compression %q is not one of Gzip, Brotli, Zstd, Disabled", v)
		}
		s.Compression = v
	}
	if v := h.ServerHeader; v != "" {
		s.ServerHeader = v
	}
	if err := accesslog.Validate(rs.AccessLog); err != nil {
		return s, err
	}
	if hp := rs.HTTPProxy; hp != nil && hp.RateLimitService != nil {
		if err := hp.RateLimitService.Validate(); err != nil {
			return s, err
		}
	}
	if t := rs.Tracing; t != nil {
		if err := t.Validate(); err != nil {
			return s, err
		}
	}
	if a := rs.GlobalExtAuth; a != nil {
		if err := a.Validate(); err != nil {
			return s, err
		}
	}
	if v := rs.AccessLog.Format; v != "" {
		s.AccessLog = v
	}
	s.AccessLogText = rs.AccessLog.TextFormat
	switch v := rs.AccessLog.Level; v {
	case "", "Info", "Error", "Critical":
		s.AccessLogLevel = v
	default:
		return s, fmt.Errorf("runtimeSettings.accessLog.level %q is not Info, Error or Critical", v)
	}
	s.AccessLogJSON = rs.AccessLog.JSONFields
	return s, nil
}

// clusterDefaults reads runtimeSettings.cluster.
func clusterDefaults(c v1alpha1.ClusterSettings, out *ClusterDefaults) error {
	positive := func(field string, v *int32) (uint32, error) {
		if v == nil {
			return 0, nil
		}
		if *v < 1 {
			return 0, fmt.Errorf("runtimeSettings.cluster.%s %d is not positive", field, *v)
		}
		return uint32(*v), nil
	}
	var err error
	if b := c.CircuitBreakers; b != nil {
		cb := &out.CircuitBreakers
		for _, f := range []struct {
			name string
			v    *int32
			to   *uint32
		}{
			{"circuitBreakers.maxConnections", b.MaxConnections, &cb.MaxConnections},
			{"circuitBreakers.maxPendingRequests", b.MaxPendingRequests, &cb.MaxPendingRequests},
			{"circuitBreakers.maxRequests", b.MaxRequests, &cb.MaxRequests},
			{"circuitBreakers.maxRetries", b.MaxRetries, &cb.MaxRetries},
			{"circuitBreakers.perHostMaxConnections", b.PerHostMaxConnections, &cb.PerHostMaxConnections},
		} {
			if *f.to, err = positive(f.name, f.v); err != nil {
				return err
			}
		}
	}
	if out.MaxRequestsPerConnection, err = positive("maxRequestsPerConnection", c.MaxRequestsPerConnection); err != nil {
		return err
	}
	if out.BufferLimit, err = positive("perConnectionBufferLimitBytes", c.PerConnectionBufferLimitBytes); err != nil {
		return err
	}
	switch c.DNSLookupFamily {
	case "", "auto", "v4", "v6", "all":
		out.DNSFamily = c.DNSLookupFamily
	default:
		return fmt.Errorf("runtimeSettings.cluster.dnsLookupFamily %q is not auto, v4, v6 or all", c.DNSLookupFamily)
	}
	if t := c.UpstreamTLS; t != nil {
		out.TLSMinimumVersion, out.TLSMaximumVersion = t.MinimumVersion, t.MaximumVersion
		for _, cs := range t.CipherSuites {
			out.CipherSuites = append(out.CipherSuites, string(cs))
		}
	}
	return nil
}
