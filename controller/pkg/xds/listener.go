package xds

import (
	"cmp"
	"fmt"
	proxyprotocolv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/listener/proxy_protocol/v3"
	"slices"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	corsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/cors/v3"
	localratelimitv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/local_ratelimit/v3"
	rbacv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/rbac/v3"
	routerv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	statefulsessionv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/stateful_session/v3"
	tlsinspectorv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/listener/tls_inspector/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"isobar.dev/controller/pkg/ir"
)

// ads is the config source of every dynamic resource: the ADS stream Envoy
// already has to the controller.
func ads() *corev3.ConfigSource {
	return &corev3.ConfigSource{
		ResourceApiVersion:    corev3.ApiVersion_V3,
		ConfigSourceSpecifier: &corev3.ConfigSource_Ads{Ads: &corev3.AggregatedConfigSource{}},
	}
}

// translateListener builds an IR listener, taking from before, what was
// built of the listener of its name last, the route configurations and
// filter chains the IR's changes do not name.
func (x *Translator) translateListener(l *ir.Listener, s Settings, before *builtListener) (*builtListener, error) {
	if before == nil {
		before = &builtListener{}
	}
	b := &builtListener{routeConfigs: map[string]*builtRouteConfig{}, chains: map[string]*listenerv3.FilterChain{}}
	out := &listenerv3.Listener{
		Name: l.Name,
		Address: &corev3.Address{Address: &corev3.Address_SocketAddress{SocketAddress: &corev3.SocketAddress{
			Protocol:      corev3.SocketAddress_TCP,
			Address:       "0.0.0.0",
			PortSpecifier: &corev3.SocketAddress_PortValue{PortValue: uint32(l.ContainerPort)},
		}}},
		// Envoy's default buffer limit is 1 MiB per connection; large
		// headers and uploads stream through the profile's, 32 KiB by
		// default.
		PerConnectionBufferLimitBytes: wrapperspb.UInt32(cmp.Or(s.ListenerBufferLimit, 32768)),
	}
	switch l.Protocol {
	case ir.HTTP:
		if err := x.routeConfiguration(l.HTTP, before, b); err != nil {
			return nil, err
		}
		out.FilterChains = []*listenerv3.FilterChain{{
			Filters: []*listenerv3.Filter{httpConnectionManager(l.Name, l.HTTP, s, nil)},
		}}
	case ir.HTTPS, ir.TLS:
		out.ListenerFilters = []*listenerv3.ListenerFilter{{
			Name:       "envoy.filters.listener.tls_inspector",
			ConfigType: &listenerv3.ListenerFilter_TypedConfig{TypedConfig: typed(tlsInspector(s))},
		}}
		for _, c := range l.Chains {
			if c.HTTP != nil {
				if err := x.routeConfiguration(c.HTTP, before, b); err != nil {
					return nil, err
				}
				out.FilterChains = append(out.FilterChains, x.httpsChain(l.Name, c, s, before, b))
				continue
			}
			fc := &listenerv3.FilterChain{}
			switch {
			case c.TCP != nil:
				fc.Filters = []*listenerv3.Filter{tcpProxy(l.Name, c.TCP, s)}
				if len(c.Certificates) > 0 {
					fc.TransportSocket = downstreamTLS(c, nil, s)
				}
			default:
				return nil, fmt.Errorf("listener %s: a filter chain without HTTP or TCP", l.Name)
			}
			if len(c.ServerNames) > 0 {
				fc.FilterChainMatch = &listenerv3.FilterChainMatch{ServerNames: c.ServerNames}
			}
			out.FilterChains = append(out.FilterChains, fc)
		}
	case ir.TCP:
		out.FilterChains = []*listenerv3.FilterChain{{Filters: []*listenerv3.Filter{tcpProxy(l.Name, l.TCP, s)}}}
	case ir.UDP:
		out.Address.GetSocketAddress().Protocol = corev3.SocketAddress_UDP
		out.PerConnectionBufferLimitBytes = nil
		out.ListenerFilters = []*listenerv3.ListenerFilter{udpProxy(l.Name, l.UDP, s)}
	default:
		return nil, fmt.Errorf("listener %s: protocol %s is not supported so far", l.Name, l.Protocol)
	}
	if l.Protocol != ir.UDP {
		listenerOptions(out, s)
	}
	if s.ProxyProtocol && l.Protocol != ir.UDP {
		// First of all: the TLS inspector reads what follows the header.
		out.ListenerFilters = append([]*listenerv3.ListenerFilter{{
			Name:       "envoy.filters.listener.proxy_protocol",
			ConfigType: &listenerv3.ListenerFilter_TypedConfig{TypedConfig: typed(&proxyprotocolv3.ProxyProtocol{})},
		}}, out.ListenerFilters...)
	}
	b.listener = out
	return b, nil
}

// httpsChain is the filter chain of an HTTPS server name. It names its
// route configuration rather than holding it, so it is kept while the IR's
// changes do not name it: a listener of thousands of server names does not
// build (and compare, and push) them all again for a change to one's
// routes.
func (x *Translator) httpsChain(listener string, c *ir.Chain, s Settings, before, b *builtListener) *listenerv3.FilterChain {
	fc, ok := before.chains[c.HTTP.Name]
	if !ok || !x.changes.KeepsChain(c.HTTP.Name) {
		fc = &listenerv3.FilterChain{
			Filters:         []*listenerv3.Filter{httpConnectionManager(listener, c.HTTP, s, c.ForwardClientCert)},
			TransportSocket: downstreamTLS(c, alpn(s), s),
		}
		if len(c.ServerNames) > 0 {
			fc.FilterChainMatch = &listenerv3.FilterChainMatch{ServerNames: c.ServerNames}
		}
	}
	b.chains[c.HTTP.Name] = fc
	return fc
}

// httpConnectionManager routes through RDS, to the route table's
// configuration; its stats prefix is the listener's name so that Envoy's
// stats name the Gateway port. The table's JWT providers are the JWT
// filter's.
//
// With fwd, the client's certificate details replace a request's
// x-forwarded-client-cert (SANITIZE_SET); without, Envoy's default
// removes the header (SANITIZE), so that a client cannot forge it.
func httpConnectionManager(listener string, table *ir.RouteTable, s Settings, fwd *ir.ForwardClientCert) *listenerv3.Filter {
	hcm := &hcmv3.HttpConnectionManager{
		StatPrefix: listener,
		CodecType:  codec(s),
		RouteSpecifier: &hcmv3.HttpConnectionManager_Rds{Rds: &hcmv3.Rds{
			RouteConfigName: table.Name,
			ConfigSource:    ads(),
		}},
		// CORS, the local rate limit, RBAC, external authorization, the
		// global rate limit, the stateful session and Lua do nothing for
		// routes without a CORS policy, a local rate limit, an IP filter,
		// an authorization server, descriptors, a session or a backend
		// whose cookies are rewritten. A
		// CORS preflight is answered first, and a limited request is not
		// checked further, as Contour orders them.
		HttpFilters: []*hcmv3.HttpFilter{{
			Name:       corsFilter,
			ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: typed(&corsv3.Cors{})},
		}, {
			Name:       localRateLimitFilter,
			ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: typed(&localratelimitv3.LocalRateLimit{StatPrefix: "http"})},
		}, {
			Name:       rbacFilter,
			ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: typed(&rbacv3.RBAC{})},
		}, {
			Name:       statefulSessionFilter,
			ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: typed(&statefulsessionv3.StatefulSession{})},
		}, luaHTTPFilter(), {
			Name:       "envoy.filters.http.router",
			ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: typed(&routerv3.Router{})},
		}},
		// HTTP/1.0 with a Host header, chunked bodies that also carry a
		// Content-Length (the latter dropped, as RFC 9112 asks), and a
		// client's own X-Request-Id: as Contour's listeners accept them.
		HttpProtocolOptions:          &corev3.Http1ProtocolOptions{AcceptHttp_10: true, AllowChunkedLength: s.AllowChunkedLength},
		StripTrailingHostDot:         s.StripTrailingHostDot,
		PreserveExternalRequestId:    true,
		UseRemoteAddress:             wrapperspb.Bool(true),
		XffNumTrustedHops:            s.NumTrustedHops,
		NormalizePath:                wrapperspb.Bool(true),
		MergeSlashes:                 s.MergeSlashes,
		PathWithEscapedSlashesAction: escapedSlashes(s),
		UpgradeConfigs:               []*hcmv3.HttpConnectionManager_UpgradeConfig{{UpgradeType: "websocket"}},
		CommonHttpProtocolOptions: &corev3.HttpProtocolOptions{
			IdleTimeout:              duration(s.ConnectionIdleTimeout),
			MaxConnectionDuration:    duration(s.MaxConnectionDuration),
			MaxRequestsPerConnection: optionalUInt32(s.MaxRequestsPerConnection),
		},
		RequestTimeout:             duration(s.RequestTimeout),
		DelayedCloseTimeout:        delayedClose(s.DelayedCloseTimeout),
		StreamIdleTimeout:          duration(s.StreamIdleTimeout),
		RequestHeadersTimeout:      duration(s.RequestHeadersTimeout),
		DrainTimeout:               duration(s.ConnectionShutdownGracePeriod),
		MaxRequestHeadersKb:        wrapperspb.UInt32(s.MaxRequestHeadersKiB),
		ServerHeaderTransformation: serverHeader(s),
		AccessLog:                  httpAccessLogs(s),
		Tracing:                    tracing(s.Tracing),
	}
	// After RBAC, before the stateful session.
	at := slices.IndexFunc(hcm.HttpFilters, func(f *hcmv3.HttpFilter) bool { return f.Name == statefulSessionFilter })
	hcm.HttpFilters = slices.Insert(hcm.HttpFilters, at, extAuthzHTTPFilters(s.ExtAuthHeaders)...)
	if s.RateLimit != nil {
		// After the authorization filters, before the stateful session
		// and the router: a request that is not let in is not counted.
		at := slices.IndexFunc(hcm.HttpFilters, func(f *hcmv3.HttpFilter) bool { return f.Name == statefulSessionFilter })
		hcm.HttpFilters = slices.Insert(hcm.HttpFilters, at, globalRateLimitHTTPFilter(s.RateLimit))
	}
	if f := jwtAuthnHTTPFilter(jwtProvidersOf(table)); f != nil {
		// After RBAC, before external authorization, as Contour orders
		// them: the authorization server sees only verified tokens.
		at := slices.IndexFunc(hcm.HttpFilters, func(f *hcmv3.HttpFilter) bool { return f.Name == extAuthzFilter })
		hcm.HttpFilters = slices.Insert(hcm.HttpFilters, at, f)
	}
	// The compressor, then gRPC-Web, first of all, as Contour orders them:
	// the compressor sees every answer, and the filters after gRPC-Web
	// see a gRPC-Web call as the gRPC call it becomes.
	front := []*hcmv3.HttpFilter{grpcWebHTTPFilter()}
	if f := compressorHTTPFilter(s); f != nil {
		front = append([]*hcmv3.HttpFilter{f}, front...)
	}
	hcm.HttpFilters = append(front, hcm.HttpFilters...)
	if n := s.HTTP2MaxConcurrentStreams; n > 0 {
		hcm.Http2ProtocolOptions = &corev3.Http2ProtocolOptions{MaxConcurrentStreams: wrapperspb.UInt32(n)}
	}
	if fwd != nil {
		hcm.ForwardClientCertDetails = hcmv3.HttpConnectionManager_SANITIZE_SET
		hcm.SetCurrentClientCertDetails = &hcmv3.HttpConnectionManager_SetCurrentClientCertDetails{
			Subject: wrapperspb.Bool(fwd.Subject), Cert: fwd.Cert, Chain: fwd.Chain, Dns: fwd.DNS, Uri: fwd.URI,
		}
	}
	return &listenerv3.Filter{
		Name:       "envoy.filters.network.http_connection_manager",
		ConfigType: &listenerv3.Filter_TypedConfig{TypedConfig: typed(hcm)},
	}
}

// downstreamTLS terminates TLS with c's certificates, within c's TLS
// versions or the fleet's; with c's client validation, Envoy asks clients
// for a certificate and verifies it against its CAs (required, unless it
// is optional: then it lets in clients without one or whose does not
// verify; or merely requested: then it lets in clients without one).
func downstreamTLS(c *ir.Chain, alpn []string, s Settings) *corev3.TransportSocket {
	ctx := &tlsv3.DownstreamTlsContext{CommonTlsContext: &tlsv3.CommonTlsContext{
		TlsParams: &tlsv3.TlsParameters{
			TlsMinimumProtocolVersion: tlsVersion(cmp.Or(c.MinTLS, s.TLSMinimumVersion)),
			TlsMaximumProtocolVersion: tlsVersion(cmp.Or(c.MaxTLS, s.TLSMaximumVersion)),
			CipherSuites:              s.CipherSuites,
			EcdhCurves:                s.ECDHCurves,
		},
		AlpnProtocols: alpn,
	}}
	if cv := c.ClientValidation; cv != nil {
		vc := &tlsv3.CertificateValidationContext{}
		if len(cv.CA) > 0 {
			vc.TrustedCa = &corev3.DataSource{Specifier: &corev3.DataSource_InlineBytes{InlineBytes: cv.CA}}
		}
		if cv.Optional || cv.Unverified {
			vc.TrustChainVerification = tlsv3.CertificateValidationContext_ACCEPT_UNTRUSTED
		}
		if len(cv.CRL) > 0 {
			vc.Crl = &corev3.DataSource{Specifier: &corev3.DataSource_InlineBytes{InlineBytes: cv.CRL}}
			vc.OnlyVerifyLeafCertCrl = cv.CRLLeafOnly
		}
		ctx.CommonTlsContext.ValidationContextType = &tlsv3.CommonTlsContext_ValidationContext{ValidationContext: vc}
		ctx.RequireClientCertificate = wrapperspb.Bool(!cv.Optional && !cv.Requested)
	}
	for _, c := range c.Certificates {
		ctx.CommonTlsContext.TlsCertificateSdsSecretConfigs = append(ctx.CommonTlsContext.TlsCertificateSdsSecretConfigs,
			&tlsv3.SdsSecretConfig{Name: c, SdsConfig: ads()})
	}
	return &corev3.TransportSocket{
		Name:       "envoy.transport_sockets.tls",
		ConfigType: &corev3.TransportSocket_TypedConfig{TypedConfig: typed(ctx)},
	}
}

// escapedSlashes is what Envoy does with %2F and %5C in a path: with
// merged slashes, it unescapes them and redirects the client to the
// unescaped, normalized path, so that a path cannot reach a route's
// backend in a form that skips the routes and policies of the path the
// backend reads; without, it keeps them as sent, as Contour does.
func escapedSlashes(s Settings) hcmv3.HttpConnectionManager_PathWithEscapedSlashesAction {
	if s.MergeSlashes {
		return hcmv3.HttpConnectionManager_UNESCAPE_AND_REDIRECT
	}
	return hcmv3.HttpConnectionManager_KEEP_UNCHANGED
}

func tlsVersion(v string) tlsv3.TlsParameters_TlsProtocol {
	switch v {
	case "1.3":
		return tlsv3.TlsParameters_TLSv1_3
	case "1.2":
		return tlsv3.TlsParameters_TLSv1_2
	default:
		return tlsv3.TlsParameters_TLS_AUTO
	}
}

// duration is nil for zero, leaving Envoy's default.
func duration(d time.Duration) *durationpb.Duration {
	if d <= 0 {
		return nil
	}
	return durationpb.New(d)
}

// delayedClose is Envoy's delayed_close_timeout, left out at Envoy's own
// default (1s); 0 is sent, as it turns the delay off.
func delayedClose(d time.Duration) *durationpb.Duration {
	if d == time.Second {
		return nil
	}
	return durationpb.New(d)
}

// optionalUInt32 is nil for 0, Envoy's "no limit".
func optionalUInt32(n uint32) *wrapperspb.UInt32Value {
	if n == 0 {
		return nil
	}
	return wrapperspb.UInt32(n)
}

// listenerOptions are the profile's options of a TCP listener: exact
// connection balancing, and the IP header bytes of what it sends
// (IP_TOS, IPV6_TCLASS, set on the listening socket so that every
// accepted connection has them).
func listenerOptions(out *listenerv3.Listener, s Settings) {
	if s.ExactBalance {
		out.ConnectionBalanceConfig = &listenerv3.Listener_ConnectionBalanceConfig{
			BalanceType: &listenerv3.Listener_ConnectionBalanceConfig_ExactBalance_{ExactBalance: &listenerv3.Listener_ConnectionBalanceConfig_ExactBalance{}},
		}
	}
	const (
		ipprotoIP, ipTOS       = 0, 1
		ipprotoIPv6, ipv6TClas = 41, 67
	)
	if s.TOS != nil {
		out.SocketOptions = append(out.SocketOptions, &corev3.SocketOption{Description: "IP_TOS", Level: ipprotoIP, Name: ipTOS,
			Value: &corev3.SocketOption_IntValue{IntValue: int64(*s.TOS)}, State: corev3.SocketOption_STATE_LISTENING})
	}
	if s.TrafficClass != nil {
		out.SocketOptions = append(out.SocketOptions, &corev3.SocketOption{Description: "IPV6_TCLASS", Level: ipprotoIPv6, Name: ipv6TClas,
			Value: &corev3.SocketOption_IntValue{IntValue: int64(*s.TrafficClass)}, State: corev3.SocketOption_STATE_LISTENING})
	}
}

// alpn is what HTTPS listeners offer TLS clients: the profile's HTTP
// versions, HTTP/2 first.
func alpn(s Settings) []string {
	var out []string
	if s.HTTP2 {
		out = append(out, "h2")
	}
	if s.HTTP1 {
		out = append(out, "http/1.1")
	}
	return out
}

// codec is the connection managers' codec for the profile's versions:
// AUTO tells them apart by the connection's first bytes.
func codec(s Settings) hcmv3.HttpConnectionManager_CodecType {
	switch {
	case s.HTTP1 && !s.HTTP2:
		return hcmv3.HttpConnectionManager_HTTP1
	case s.HTTP2 && !s.HTTP1:
		return hcmv3.HttpConnectionManager_HTTP2
	}
	return hcmv3.HttpConnectionManager_AUTO
}

// tlsInspector reads each connection's ClientHello for its SNI and ALPN,
// and, when the profile asks, its JA3 and JA4 fingerprints.
func tlsInspector(s Settings) *tlsinspectorv3.TlsInspector {
	out := &tlsinspectorv3.TlsInspector{}
	if s.JA3 {
		out.EnableJa3Fingerprinting = wrapperspb.Bool(true)
	}
	if s.JA4 {
		out.EnableJa4Fingerprinting = wrapperspb.Bool(true)
	}
	return out
}
