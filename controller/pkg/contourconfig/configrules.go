package contourconfig

import (
	"fmt"
	"strings"

	contourv1alpha1 "github.com/projectcontour/contour/apis/projectcontour/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"isobar.dev/api/ports"
	"isobar.dev/api/v1alpha1"
)

// configurationRules are the settings of Contour's ContourConfiguration
// (and of a ContourDeployment's config), in the order of its
// documentation.
var configurationRules = []Rule{
	{Path: "xdsServer", Operator: xdsOperator},
	{Path: "ingress.classNames", Profile: "(IngressClass)", carry: func(*input, *v1alpha1.ContourDeploymentSpec) error { return nil }},
	{Path: "ingress.statusAddress", Profile: "runtimeSettings.ingress.statusAddress", carry: func(in *input, out *v1alpha1.ContourDeploymentSpec) error {
		ingressOf(out).StatusAddress = in.config.Ingress.StatusAddress
		return nil
	}},
	{Path: "debug", NotCarried: "the controller has no debug endpoint; `isobar-controller explain` shows what a request meets"},
	{Path: "health", Operator: probesOperator},
	{Path: "metrics", Operator: probesOperator},
	{Path: "gateway", NotCarried: "every Gateway of the GatewayClass gets a fleet of its own; the converter writes the GatewayClass and a Gateway"},
	{Path: "envoy.listener.useProxyProtocol", Profile: "runtimeSettings.listener.useProxyProtocol", carry: func(in *input, out *v1alpha1.ContourDeploymentSpec) error {
		listenerOf(out).UseProxyProtocol = *in.config.Envoy.Listener.UseProxyProto
		return nil
	}},
	{Path: "envoy.listener.compression", Profile: "runtimeSettings.http.compression", carry: func(in *input, out *v1alpha1.ContourDeploymentSpec) error {
		a := in.config.Envoy.Listener.Compression.Algorithm
		v, ok := map[contourv1alpha1.CompressionAlgorithm]string{"gzip": "Gzip", "brotli": "Brotli", "zstd": "Zstd", "disabled": "Disabled", "": "Gzip"}[a]
		if !ok {
			return fmt.Errorf("envoy.listener.compression.algorithm %q is not gzip, brotli, zstd or disabled", a)
		}
		out.RuntimeSettings.HTTP.Compression = v
		return nil
	}},
	{Path: "envoy.listener.disableAllowChunkedLength", Profile: "runtimeSettings.http.allowChunkedLength", carry: func(in *input, out *v1alpha1.ContourDeploymentSpec) error {
		out.RuntimeSettings.HTTP.AllowChunkedLength = ptr.To(!*in.config.Envoy.Listener.DisableAllowChunkedLength)
		return nil
	}},
	{Path: "envoy.listener.disableMergeSlashes", Profile: "runtimeSettings.http.mergeSlashes", carry: func(in *input, out *v1alpha1.ContourDeploymentSpec) error {
		out.RuntimeSettings.HTTP.MergeSlashes = ptr.To(!*in.config.Envoy.Listener.DisableMergeSlashes)
		return nil
	}},
	{Path: "envoy.listener.serverHeaderTransformation", Profile: "runtimeSettings.http.serverHeader", carry: func(in *input, out *v1alpha1.ContourDeploymentSpec) error {
		v := in.config.Envoy.Listener.ServerHeaderTransformation
		h, ok := map[contourv1alpha1.ServerHeaderTransformationType]string{"overwrite": "Overwrite", "append_if_absent": "AppendIfAbsent", "pass_through": "PassThrough"}[v]
		if !ok {
			return fmt.Errorf("envoy.listener.serverHeaderTransformation %q is not overwrite, append_if_absent or pass_through", v)
		}
		out.RuntimeSettings.HTTP.ServerHeader = h
		return nil
	}},
	{Path: "envoy.listener.connectionBalancer", Profile: "runtimeSettings.listener.connectionBalancer", carry: func(in *input, out *v1alpha1.ContourDeploymentSpec) error {
		switch b := in.config.Envoy.Listener.ConnectionBalancer; b {
		case "exact":
			listenerOf(out).ConnectionBalancer = "Exact"
		case "":
		default:
			return fmt.Errorf("envoy.listener.connectionBalancer %q is not exact", b)
		}
		return nil
	}},
	{Path: "envoy.listener.maxRequestsPerConnection", Profile: "runtimeSettings.http.maxRequestsPerConnection", carry: func(in *input, out *v1alpha1.ContourDeploymentSpec) error {
		n, err := int32Of("envoy.listener.maxRequestsPerConnection", *in.config.Envoy.Listener.MaxRequestsPerConnection)
		out.RuntimeSettings.HTTP.MaxRequestsPerConnection = n
		return err
	}},
	{Path: "envoy.listener.per-connection-buffer-limit-bytes", Profile: "runtimeSettings.listener.perConnectionBufferLimitBytes", carry: func(in *input, out *v1alpha1.ContourDeploymentSpec) error {
		n, err := int32Of("envoy.listener.per-connection-buffer-limit-bytes", *in.config.Envoy.Listener.PerConnectionBufferLimitBytes)
		listenerOf(out).PerConnectionBufferLimitBytes = n
		return err
	}},
	{Path: "envoy.listener.tls.minimumProtocolVersion", Profile: "runtimeSettings.tls.minimumVersion", carry: func(in *input, out *v1alpha1.ContourDeploymentSpec) error {
		v, err := tlsVersion("envoy.listener.tls.minimumProtocolVersion", in.config.Envoy.Listener.TLS.MinimumProtocolVersion)
		out.RuntimeSettings.TLS.MinimumVersion = v
		return err
	}},
	{Path: "envoy.listener.tls.maximumProtocolVersion", Profile: "runtimeSettings.tls.maximumVersion", carry: func(in *input, out *v1alpha1.ContourDeploymentSpec) error {
		v, err := tlsVersion("envoy.listener.tls.maximumProtocolVersion", in.config.Envoy.Listener.TLS.MaximumProtocolVersion)
		out.RuntimeSettings.TLS.MaximumVersion = v
		return err
	}},
	{Path: "envoy.listener.tls.cipherSuites", Profile: "runtimeSettings.tls.cipherSuites", carry: func(in *input, out *v1alpha1.ContourDeploymentSpec) error {
		for _, c := range in.config.Envoy.Listener.TLS.CipherSuites {
			out.RuntimeSettings.TLS.CipherSuites = append(out.RuntimeSettings.TLS.CipherSuites, v1alpha1.CipherSuite(c))
		}
		return nil
	}},
	{Path: "envoy.listener.socketOptions", Profile: "runtimeSettings.listener.socketOptions", carry: func(in *input, out *v1alpha1.ContourDeploymentSpec) error {
		o := in.config.Envoy.Listener.SocketOptions
		so := &v1alpha1.SocketOptions{}
		for name, v := range map[string]int32{"tos": o.TOS, "trafficClass": o.TrafficClass} {
			if v < 0 || v > 255 {
				return fmt.Errorf("envoy.listener.socketOptions.%s %d is not a byte", name, v)
			}
		}
		if o.TOS != 0 {
			so.TOS = ptr.To(o.TOS)
		}
		if o.TrafficClass != 0 {
			so.TrafficClass = ptr.To(o.TrafficClass)
		}
		listenerOf(out).SocketOptions = so
		return nil
	}},
	{Path: "envoy.listener.maxRequestsPerIOCycle", Profile: "envoy.maxRequestsPerIOCycle", carry: func(in *input, out *v1alpha1.ContourDeploymentSpec) error {
		out.Envoy.MaxRequestsPerIOCycle = ptr.To(int64(*in.config.Envoy.Listener.MaxRequestsPerIOCycle))
		return nil
	}},
	{Path: "envoy.listener.httpMaxConcurrentStreams", Profile: "runtimeSettings.http.http2MaxConcurrentStreams", carry: func(in *input, out *v1alpha1.ContourDeploymentSpec) error {
		n, err := int32Of("envoy.listener.httpMaxConcurrentStreams", *in.config.Envoy.Listener.HTTP2MaxConcurrentStreams)
		out.RuntimeSettings.HTTP.HTTP2MaxConcurrentStreams = n
		return err
	}},
	{Path: "envoy.listener.tls.fingerprint", Profile: "runtimeSettings.tls.fingerprint", carry: func(in *input, out *v1alpha1.ContourDeploymentSpec) error {
		out.RuntimeSettings.TLS.Fingerprint = &v1alpha1.TLSFingerprint{
			JA3: in.newer["envoy.listener.tls.fingerprint.ja3"] == "true",
			JA4: in.newer["envoy.listener.tls.fingerprint.ja4"] == "true",
		}
		return nil
	}},
	{Path: "envoy.listener.maxConnectionsPerListener", Profile: "runtimeSettings.listener.maxConnectionsPerListener", carry: func(in *input, out *v1alpha1.ContourDeploymentSpec) error {
		listenerOf(out).MaxConnectionsPerListener = ptr.To(int64(*in.config.Envoy.Listener.MaxConnectionsPerListener))
		return nil
	}},
	{Path: "envoy.service", Operator: perGateway},
	{Path: "envoy.http", Operator: perGateway + "; Envoy logs requests to standard output"},
	{Path: "envoy.https", Operator: perGateway + "; Envoy logs requests to standard output"},
	{Path: "envoy.health", Operator: probesOperator},
	{Path: "envoy.metrics", Operator: probesOperator},
	{Path: "envoy.clientCertificate", Profile: "(Gateway spec.tls.backend.clientCertificateRef)", carry: func(*input, *v1alpha1.ContourDeploymentSpec) error { return nil }},
	{Path: "envoy.logging.accessLogFormat", Profile: "runtimeSettings.accessLog.format", carry: func(in *input, out *v1alpha1.ContourDeploymentSpec) error {
		v, ok := map[contourv1alpha1.AccessLogType]string{"envoy": "Text", "json": "JSON"}[in.config.Envoy.Logging.AccessLogFormat]
		if !ok {
			return fmt.Errorf("envoy.logging.accessLogFormat %q is not envoy or json", in.config.Envoy.Logging.AccessLogFormat)
		}
		out.RuntimeSettings.AccessLog.Format = v
		return nil
	}},
	{Path: "envoy.logging.accessLogFormatString", Profile: "runtimeSettings.accessLog.textFormat", carry: func(in *input, out *v1alpha1.ContourDeploymentSpec) error {
		out.RuntimeSettings.AccessLog.TextFormat = in.config.Envoy.Logging.AccessLogFormatString
		return nil
	}},
	{Path: "envoy.logging.accessLogJSONFields", Profile: "runtimeSettings.accessLog.jsonFields", carry: func(in *input, out *v1alpha1.ContourDeploymentSpec) error {
		for _, f := range in.config.Envoy.Logging.AccessLogJSONFields {
			if !strings.Contains(f, "=") {
				op, ok := contourJSONFields[f]
				if !ok {
					return fmt.Errorf("envoy.logging.accessLogJSONFields: %q is not a field Contour knows by name; write it as %s=%%OPERATOR%%", f, f)
				}
				f += "=" + op
			}
			out.RuntimeSettings.AccessLog.JSONFields = append(out.RuntimeSettings.AccessLog.JSONFields, f)
		}
		return nil
	}},
	{Path: "envoy.logging.accessLogLevel", Profile: "runtimeSettings.accessLog.level", carry: func(in *input, out *v1alpha1.ContourDeploymentSpec) error {
		switch l := in.config.Envoy.Logging.AccessLogLevel; l {
		case "info":
			out.RuntimeSettings.AccessLog.Level = "Info"
		case "error":
			out.RuntimeSettings.AccessLog.Level = "Error"
		case "critical":
			out.RuntimeSettings.AccessLog.Level = "Critical"
		case "disabled":
			out.RuntimeSettings.AccessLog.Format = "Disabled"
		default:
			return fmt.Errorf("envoy.logging.accessLogLevel %q is not info, error, critical or disabled", l)
		}
		return nil
	}},
	{Path: "envoy.defaultHTTPVersions", Profile: "runtimeSettings.http.versions", carry: func(in *input, out *v1alpha1.ContourDeploymentSpec) error {
		out.RuntimeSettings.HTTP.Versions = nil
		for _, v := range in.config.Envoy.DefaultHTTPVersions {
			switch strings.ToUpper(string(v)) {
			case "HTTP/1.1":
				out.RuntimeSettings.HTTP.Versions = append(out.RuntimeSettings.HTTP.Versions, "HTTP/1.1")
			case "HTTP/2":
				out.RuntimeSettings.HTTP.Versions = append(out.RuntimeSettings.HTTP.Versions, "HTTP/2")
			default:
				return fmt.Errorf("envoy.defaultHTTPVersions: %q is not HTTP/1.1 or HTTP/2", v)
			}
		}
		return nil
	}},
	{Path: "envoy.timeouts.requestTimeout", Profile: "runtimeSettings.timeouts.request", carry: durationRule("envoy.timeouts.requestTimeout", func(in *input) *string { return in.config.Envoy.Timeouts.RequestTimeout }, func(t *v1alpha1.TimeoutSettings) **metav1.Duration { return &t.Request }, true)},
	{Path: "envoy.timeouts.connectionIdleTimeout", Profile: "runtimeSettings.timeouts.connectionIdle", carry: durationRule("envoy.timeouts.connectionIdleTimeout", func(in *input) *string { return in.config.Envoy.Timeouts.ConnectionIdleTimeout }, func(t *v1alpha1.TimeoutSettings) **metav1.Duration { return &t.ConnectionIdle }, false)},
	{Path: "envoy.timeouts.streamIdleTimeout", Profile: "runtimeSettings.timeouts.streamIdle", carry: durationRule("envoy.timeouts.streamIdleTimeout", func(in *input) *string { return in.config.Envoy.Timeouts.StreamIdleTimeout }, func(t *v1alpha1.TimeoutSettings) **metav1.Duration { return &t.StreamIdle }, false)},
	{Path: "envoy.timeouts.maxConnectionDuration", Profile: "runtimeSettings.timeouts.maxConnectionDuration", carry: durationRule("envoy.timeouts.maxConnectionDuration", func(in *input) *string { return in.config.Envoy.Timeouts.MaxConnectionDuration }, func(t *v1alpha1.TimeoutSettings) **metav1.Duration { return &t.MaxConnectionDuration }, true)},
	{Path: "envoy.timeouts.delayedCloseTimeout", Profile: "runtimeSettings.timeouts.delayedClose", carry: durationRule("envoy.timeouts.delayedCloseTimeout", func(in *input) *string { return in.config.Envoy.Timeouts.DelayedCloseTimeout }, func(t *v1alpha1.TimeoutSettings) **metav1.Duration { return &t.DelayedClose }, false)},
	{Path: "envoy.timeouts.connectionShutdownGracePeriod", Profile: "runtimeSettings.timeouts.connectionShutdownGracePeriod", carry: durationRule("envoy.timeouts.connectionShutdownGracePeriod", func(in *input) *string { return in.config.Envoy.Timeouts.ConnectionShutdownGracePeriod }, func(t *v1alpha1.TimeoutSettings) **metav1.Duration { return &t.ConnectionShutdownGracePeriod }, false)},
	{Path: "envoy.timeouts.connectTimeout", Profile: "runtimeSettings.timeouts.upstreamConnect", carry: durationRule("envoy.timeouts.connectTimeout", func(in *input) *string { return in.config.Envoy.Timeouts.ConnectTimeout }, func(t *v1alpha1.TimeoutSettings) **metav1.Duration { return &t.UpstreamConnect }, false)},
	{Path: "envoy.cluster.dnsLookupFamily", Profile: "runtimeSettings.cluster.dnsLookupFamily", carry: func(in *input, out *v1alpha1.ContourDeploymentSpec) error {
		f := string(in.config.Envoy.Cluster.DNSLookupFamily)
		if f != "auto" && f != "v4" && f != "v6" && f != "all" {
			return fmt.Errorf("envoy.cluster.dnsLookupFamily %q is not auto, v4, v6 or all", f)
		}
		clusterOf(out).DNSLookupFamily = f
		return nil
	}},
	{Path: "envoy.cluster.maxRequestsPerConnection", Profile: "runtimeSettings.cluster.maxRequestsPerConnection", carry: func(in *input, out *v1alpha1.ContourDeploymentSpec) error {
		n, err := int32Of("envoy.cluster.maxRequestsPerConnection", *in.config.Envoy.Cluster.MaxRequestsPerConnection)
		clusterOf(out).MaxRequestsPerConnection = n
		return err
	}},
	{Path: "envoy.cluster.per-connection-buffer-limit-bytes", Profile: "runtimeSettings.cluster.perConnectionBufferLimitBytes", carry: func(in *input, out *v1alpha1.ContourDeploymentSpec) error {
		n, err := int32Of("envoy.cluster.per-connection-buffer-limit-bytes", *in.config.Envoy.Cluster.PerConnectionBufferLimitBytes)
		clusterOf(out).PerConnectionBufferLimitBytes = n
		return err
	}},
	{Path: "envoy.cluster.circuitBreakers", Profile: "runtimeSettings.cluster.circuitBreakers", carry: func(in *input, out *v1alpha1.ContourDeploymentSpec) error {
		c := in.config.Envoy.Cluster.GlobalCircuitBreakerDefaults
		limit := func(n uint32) *int32 {
			if n == 0 || n > 1<<31-1 {
				return nil
			}
			return ptr.To(int32(n))
		}
		clusterOf(out).CircuitBreakers = &v1alpha1.CircuitBreakerSettings{
			MaxConnections: limit(c.MaxConnections), MaxPendingRequests: limit(c.MaxPendingRequests), MaxRequests: limit(c.MaxRequests),
			MaxRetries: limit(c.MaxRetries), PerHostMaxConnections: limit(c.PerHostMaxConnections),
		}
		return nil
	}},
	{Path: "envoy.cluster.upstreamTLS", Profile: "runtimeSettings.cluster.upstreamTLS", carry: func(in *input, out *v1alpha1.ContourDeploymentSpec) error {
		t := in.config.Envoy.Cluster.UpstreamTLS
		u := &v1alpha1.UpstreamTLSSettings{}
		var err error
		if t.MinimumProtocolVersion != "" {
			if u.MinimumVersion, err = tlsVersion("envoy.cluster.upstreamTLS.minimumProtocolVersion", t.MinimumProtocolVersion); err != nil {
				return err
			}
		}
		if t.MaximumProtocolVersion != "" {
			if u.MaximumVersion, err = tlsVersion("envoy.cluster.upstreamTLS.maximumProtocolVersion", t.MaximumProtocolVersion); err != nil {
				return err
			}
		}
		for _, c := range t.CipherSuites {
			u.CipherSuites = append(u.CipherSuites, v1alpha1.CipherSuite(c))
		}
		clusterOf(out).UpstreamTLS = u
		return nil
	}},
	{Path: "envoy.network.numTrustedHops", Profile: "runtimeSettings.http.numTrustedHops", carry: func(in *input, out *v1alpha1.ContourDeploymentSpec) error {
		n, err := int32Of("envoy.network.numTrustedHops", *in.config.Envoy.Network.XffNumTrustedHops)
		out.RuntimeSettings.HTTP.NumTrustedHops = n
		return err
	}},
	{Path: "envoy.network.adminPort", Operator: "the operator binds Envoy's admin interface to 127.0.0.1 in the pod, out of the network's reach"},
	{Path: "envoy.network.stripTrailingHostDot", Profile: "runtimeSettings.http.stripTrailingHostDot", carry: func(in *input, out *v1alpha1.ContourDeploymentSpec) error {
		out.RuntimeSettings.HTTP.StripTrailingHostDot = *in.config.Envoy.Network.EnvoyStripTrailingHostDot
		return nil
	}},
	{Path: "envoy.omEnforcedHealth", Profile: "envoy.omEnforcedHealth", carry: func(in *input, out *v1alpha1.ContourDeploymentSpec) error {
		out.Envoy.OMEnforcedHealth = ptr.To(true)
		h := in.config.Envoy.OMEnforcedHealth
		if (h.Address == "" || h.Address == "0.0.0.0") && (h.Port == 0 || h.Port == ports.EnvoyOverloadHealth) {
			return nil
		}
		return notCarried(fmt.Sprintf("its address and port are the operator's: Envoy serves it on port %d of every interface (container port om-health); point the load balancer's health check there", ports.EnvoyOverloadHealth))
	}},
	{Path: "httpproxy.disablePermitInsecure", Profile: "runtimeSettings.httpproxy.disablePermitInsecure", carry: func(in *input, out *v1alpha1.ContourDeploymentSpec) error {
		httpProxy(out).DisablePermitInsecure = *in.config.HTTPProxy.DisablePermitInsecure
		return nil
	}},
	{Path: "httpproxy.rootNamespaces", Profile: "runtimeSettings.httpproxy.rootNamespaces", carry: func(in *input, out *v1alpha1.ContourDeploymentSpec) error {
		httpProxy(out).RootNamespaces = in.config.HTTPProxy.RootNamespaces
		return nil
	}},
	{Path: "httpproxy.fallbackCertificate", Profile: "runtimeSettings.httpproxy.fallbackCertificate", carry: func(in *input, out *v1alpha1.ContourDeploymentSpec) error {
		f := in.config.HTTPProxy.FallbackCertificate
		httpProxy(out).FallbackCertificate = &v1alpha1.SecretReference{Namespace: f.Namespace, Name: f.Name}
		return nil
	}},
	{Path: "enableExternalNameService", Profile: "runtimeSettings.httpproxy.enableExternalNameService", carry: func(in *input, out *v1alpha1.ContourDeploymentSpec) error {
		httpProxy(out).EnableExternalNameService = *in.config.EnableExternalNameService
		return nil
	}},
	{Path: "globalExtAuth", Profile: "runtimeSettings.globalExtAuth", carry: globalExtAuth},
	{Path: "rateLimitService", Profile: "runtimeSettings.httpproxy.rateLimitService", carry: func(in *input, out *v1alpha1.ContourDeploymentSpec) error {
		r := in.config.RateLimitService
		httpProxy(out).RateLimitService = &v1alpha1.RateLimitServiceSettings{
			ExtensionService:             v1alpha1.ObjectReference{Namespace: r.ExtensionService.Namespace, Name: r.ExtensionService.Name},
			Domain:                       r.Domain,
			FailOpen:                     ptr.Deref(r.FailOpen, false),
			EnableXRateLimitHeaders:      ptr.Deref(r.EnableXRateLimitHeaders, false),
			EnableResourceExhaustedCode:  ptr.Deref(r.EnableResourceExhaustedCode, false),
			DefaultGlobalRateLimitPolicy: r.DefaultGlobalRateLimitPolicy,
		}
		return nil
	}},
	{Path: "policy", Profile: "runtimeSettings.httpproxy.policy", carry: func(in *input, out *v1alpha1.ContourDeploymentSpec) error {
		p := in.config.Policy
		conv := func(h *contourv1alpha1.HeadersPolicy) *v1alpha1.HeadersPolicy {
			if h == nil {
				return nil
			}
			return &v1alpha1.HeadersPolicy{Set: h.Set, Remove: h.Remove}
		}
		httpProxy(out).Policy = &v1alpha1.GlobalHeadersPolicy{
			RequestHeaders: conv(p.RequestHeadersPolicy), ResponseHeaders: conv(p.ResponseHeadersPolicy), ApplyToIngress: ptr.Deref(p.ApplyToIngress, false),
		}
		return nil
	}},
	{Path: "tracing", Profile: "runtimeSettings.tracing", carry: func(in *input, out *v1alpha1.ContourDeploymentSpec) error {
		t := in.config.Tracing
		if t.ExtensionService == nil {
			return fmt.Errorf("tracing needs an extensionService")
		}
		s := &v1alpha1.TracingSettings{
			ExtensionService: v1alpha1.ObjectReference{Namespace: t.ExtensionService.Namespace, Name: t.ExtensionService.Name},
			ServiceName:      ptr.Deref(t.ServiceName, ""),
			OverallSampling:  ptr.Deref(t.OverallSampling, ""),
			MaxPathTagLength: ptr.Deref(t.MaxPathTagLength, 0),
			IncludePodDetail: ptr.Deref(t.IncludePodDetail, false),
		}
		for _, c := range t.CustomTags {
			if c != nil {
				s.CustomTags = append(s.CustomTags, v1alpha1.CustomTag{TagName: c.TagName, Literal: c.Literal, RequestHeaderName: c.RequestHeaderName})
			}
		}
		out.RuntimeSettings.Tracing = s
		return nil
	}},
	{Path: "featureFlags", NotCarried: "Isobar always reads EndpointSlices, the one feature Contour's flags turn on"},
}
