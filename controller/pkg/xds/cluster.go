package xds

import (
	"cmp"
	"slices"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	httpv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/upstreams/http/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"isobar.dev/controller/pkg/ir"
)

// cluster is an EDS cluster: its endpoints come as a ClusterLoadAssignment of
// the same name, so that an endpoint change does not touch the cluster;
// or, for host names, a DNS cluster with its endpoints in it.
func cluster(c *ir.Cluster, s Settings) *clusterv3.Cluster {
	out := &clusterv3.Cluster{
		Name:                 c.Name,
		ClusterDiscoveryType: &clusterv3.Cluster_Type{Type: clusterv3.Cluster_EDS},
		EdsClusterConfig:     &clusterv3.Cluster_EdsClusterConfig{EdsConfig: ads(), ServiceName: c.Name},
		ConnectTimeout:       duration(s.UpstreamConnectTimeout),
	}
	switch c.LoadBalancer {
	case ir.LeastRequest:
		out.LbPolicy = clusterv3.Cluster_LEAST_REQUEST
	case ir.Random:
		out.LbPolicy = clusterv3.Cluster_RANDOM
	case ir.RingHash:
		out.LbPolicy = clusterv3.Cluster_RING_HASH
	}
	if c.SlowStart.Window > 0 {
		ss := slowStart(c.SlowStart)
		if c.LoadBalancer == ir.LeastRequest {
			out.LbConfig = &clusterv3.Cluster_LeastRequestLbConfig_{LeastRequestLbConfig: &clusterv3.Cluster_LeastRequestLbConfig{SlowStartConfig: ss}}
		} else {
			out.LbConfig = &clusterv3.Cluster_RoundRobinLbConfig_{RoundRobinLbConfig: &clusterv3.Cluster_RoundRobinLbConfig{SlowStartConfig: ss}}
		}
	}
	if limits := withDefaultLimits(c.CircuitBreakers, s.Cluster.CircuitBreakers); limits != (ir.CircuitBreakers{}) {
		out.CircuitBreakers = circuitBreakers(limits)
	}
	if n := s.Cluster.BufferLimit; n > 0 {
		out.PerConnectionBufferLimitBytes = wrapperspb.UInt32(n)
	}
	if c.DNS {
		// Envoy resolves the names itself, and keeps every address.
		out.ClusterDiscoveryType = &clusterv3.Cluster_Type{Type: clusterv3.Cluster_STRICT_DNS}
		out.EdsClusterConfig, out.LoadAssignment = nil, LoadAssignment(c)
		switch cmp.Or(c.DNSFamily, s.Cluster.DNSFamily) {
		case "v4":
			out.DnsLookupFamily = clusterv3.Cluster_V4_ONLY
		case "v6":
			out.DnsLookupFamily = clusterv3.Cluster_V6_ONLY
		case "all":
			out.DnsLookupFamily = clusterv3.Cluster_ALL
		}
	}
	if c.HTTP2 || c.IdleTimeout != 0 || s.Cluster.MaxRequestsPerConnection > 0 {
		po := &httpv3.HttpProtocolOptions{}
		if c.HTTP2 {
			po.UpstreamProtocolOptions = &httpv3.HttpProtocolOptions_ExplicitHttpConfig_{ExplicitHttpConfig: &httpv3.HttpProtocolOptions_ExplicitHttpConfig{
				ProtocolConfig: &httpv3.HttpProtocolOptions_ExplicitHttpConfig_Http2ProtocolOptions{Http2ProtocolOptions: &corev3.Http2ProtocolOptions{}},
			}}
		} else {
			po.UpstreamProtocolOptions = &httpv3.HttpProtocolOptions_ExplicitHttpConfig_{ExplicitHttpConfig: &httpv3.HttpProtocolOptions_ExplicitHttpConfig{
				ProtocolConfig: &httpv3.HttpProtocolOptions_ExplicitHttpConfig_HttpProtocolOptions{HttpProtocolOptions: &corev3.Http1ProtocolOptions{}},
			}}
		}
		if c.IdleTimeout != 0 {
			// Zero turns Envoy's idle timeout off.
			po.CommonHttpProtocolOptions = &corev3.HttpProtocolOptions{IdleTimeout: durationpb.New(max(c.IdleTimeout, 0))}
		}
		if n := s.Cluster.MaxRequestsPerConnection; n > 0 {
			if po.CommonHttpProtocolOptions == nil {
				po.CommonHttpProtocolOptions = &corev3.HttpProtocolOptions{}
			}
			po.CommonHttpProtocolOptions.MaxRequestsPerConnection = wrapperspb.UInt32(n)
		}
		out.TypedExtensionProtocolOptions = map[string]*anypb.Any{"envoy.extensions.upstreams.http.v3.HttpProtocolOptions": typed(po)}
	}
	if c.TLS != nil {
		out.TransportSocket = upstreamTLS(c.TLS, s.Cluster)
	}
	if len(c.Shares) > 0 {
		out.CommonLbConfig = &clusterv3.Cluster_CommonLbConfig{LocalityConfigSpecifier: &clusterv3.Cluster_CommonLbConfig_LocalityWeightedLbConfig_{
			LocalityWeightedLbConfig: &clusterv3.Cluster_CommonLbConfig_LocalityWeightedLbConfig{},
		}}
	}
	if c.HealthCheck != nil {
		healthChecks(out, c)
	}
	return out
}

// healthChecks makes Envoy check each endpoint of c as c.HealthCheck
// says, with c's protocol (and TLS). As Contour has it, an endpoint gone
// from EDS goes at once, whatever its health, and with every endpoint
// failing Envoy sends nothing (no panic mode, where it would send to all).
func healthChecks(out *clusterv3.Cluster, c *ir.Cluster) {
	h := c.HealthCheck
	hc := &corev3.HealthCheck{
		Timeout:            durationpb.New(h.Timeout),
		Interval:           durationpb.New(h.Interval),
		UnhealthyThreshold: wrapperspb.UInt32(h.Unhealthy),
		HealthyThreshold:   wrapperspb.UInt32(h.Healthy),
	}
	if h.HTTP != nil {
		codec := typev3.CodecClientType_HTTP1
		if c.HTTP2 {
			codec = typev3.CodecClientType_HTTP2
		}
		check := &corev3.HealthCheck_HttpHealthCheck{Path: h.HTTP.Path, Host: h.HTTP.Host, CodecClientType: codec}
		for _, r := range h.HTTP.ExpectedStatuses {
			check.ExpectedStatuses = append(check.ExpectedStatuses, &typev3.Int64Range{Start: r.Start, End: r.End})
		}
		hc.HealthChecker = &corev3.HealthCheck_HttpHealthCheck_{HttpHealthCheck: check}
	} else {
		hc.HealthChecker = &corev3.HealthCheck_TcpHealthCheck_{TcpHealthCheck: &corev3.HealthCheck_TcpHealthCheck{}}
	}
	out.HealthChecks = []*corev3.HealthCheck{hc}
	out.IgnoreHealthOnHostRemoval = true
	if out.CommonLbConfig == nil {
		out.CommonLbConfig = &clusterv3.Cluster_CommonLbConfig{}
	}
	out.CommonLbConfig.HealthyPanicThreshold = &typev3.Percent{Value: 0}
}

// systemCABundle is where the Envoy image keeps the system's trusted CAs.
const systemCABundle = "/etc/ssl/certs/ca-certificates.crt"

// upstreamTLS connects to a backend over TLS, asking for the SNI and
// presenting the client certificate if any, and verifying the backend's
// certificate unless told not to.
func upstreamTLS(t *ir.UpstreamTLS, d ClusterDefaults) *corev3.TransportSocket {
	// TLS 1.2 to 1.3 unless the profile says otherwise, as Contour
	// offers backends; Envoy's own default stops at 1.2, which a backend
	// that speaks only 1.3 refuses.
	ctx := &tlsv3.UpstreamTlsContext{Sni: t.SNI, CommonTlsContext: &tlsv3.CommonTlsContext{TlsParams: &tlsv3.TlsParameters{
		TlsMinimumProtocolVersion: tlsVersion(cmp.Or(d.TLSMinimumVersion, "1.2")),
		TlsMaximumProtocolVersion: tlsVersion(cmp.Or(d.TLSMaximumVersion, "1.3")),
		CipherSuites:              d.CipherSuites,
	}}}
	if !t.Unverified {
		ctx.CommonTlsContext.ValidationContextType = &tlsv3.CommonTlsContext_ValidationContext{ValidationContext: validation(t)}
	}
	if t.ClientCertificate != "" {
		ctx.CommonTlsContext.TlsCertificateSdsSecretConfigs = []*tlsv3.SdsSecretConfig{{Name: t.ClientCertificate, SdsConfig: ads()}}
	}
	return &corev3.TransportSocket{
		Name:       "envoy.transport_sockets.tls",
		ConfigType: &corev3.TransportSocket_TypedConfig{TypedConfig: typed(ctx)},
	}
}

// validation verifies the backend's certificate against t's CAs and
// names, the SNI when it names none.
func validation(t *ir.UpstreamTLS) *tlsv3.CertificateValidationContext {
	vc := &tlsv3.CertificateValidationContext{}
	if t.SystemCA {
		vc.TrustedCa = &corev3.DataSource{Specifier: &corev3.DataSource_Filename{Filename: systemCABundle}}
	} else {
		vc.TrustedCa = &corev3.DataSource{Specifier: &corev3.DataSource_InlineBytes{InlineBytes: t.CA}}
	}
	sans := t.SubjectAltNames
	if len(sans) == 0 {
		sans = []ir.SubjectAltName{{Type: "DNS", Value: t.SNI}}
	}
	for _, san := range sans {
		typ := tlsv3.SubjectAltNameMatcher_DNS
		if san.Type == "URI" {
			typ = tlsv3.SubjectAltNameMatcher_URI
		}
		vc.MatchTypedSubjectAltNames = append(vc.MatchTypedSubjectAltNames, &tlsv3.SubjectAltNameMatcher{SanType: typ, Matcher: exact(san.Value)})
	}
	return vc
}

func invalidBackendCluster(s Settings) *clusterv3.Cluster {
	return &clusterv3.Cluster{
		Name:                 InvalidBackendCluster,
		ClusterDiscoveryType: &clusterv3.Cluster_Type{Type: clusterv3.Cluster_STATIC},
		ConnectTimeout:       duration(s.UpstreamConnectTimeout),
		LoadAssignment:       &endpointv3.ClusterLoadAssignment{ClusterName: InvalidBackendCluster},
	}
}

// LoadAssignment is a cluster's endpoints as EDS serves them. The live
// controller's endpoint-only fast path calls it directly.
func LoadAssignment(c *ir.Cluster) *endpointv3.ClusterLoadAssignment {
	out := &endpointv3.ClusterLoadAssignment{ClusterName: c.Name}
	proto := corev3.SocketAddress_TCP
	if c.UDP {
		proto = corev3.SocketAddress_UDP
	}
	if len(c.Shares) > 0 {
		// A locality per share with endpoints, weighted: Envoy picks a
		// locality by weight among those with healthy endpoints, then an
		// endpoint in it.
		for _, sh := range c.Shares {
			if sh.Weight == 0 || len(sh.Endpoints) == 0 {
				continue
			}
			lle := localityEndpoints(sh.Endpoints, proto)
			lle.Locality = &corev3.Locality{SubZone: sh.Cluster}
			lle.LoadBalancingWeight = wrapperspb.UInt32(sh.Weight)
			out.Endpoints = append(out.Endpoints, lle)
		}
		return out
	}
	if len(c.Endpoints) == 0 {
		return out
	}
	out.Endpoints = []*endpointv3.LocalityLbEndpoints{localityEndpoints(c.Endpoints, proto)}
	return out
}

func localityEndpoints(eps []ir.Endpoint, proto corev3.SocketAddress_Protocol) *endpointv3.LocalityLbEndpoints {
	lle := &endpointv3.LocalityLbEndpoints{LbEndpoints: make([]*endpointv3.LbEndpoint, len(eps))}
	for i, e := range eps {
		ep := &endpointv3.Endpoint{
			Address: &corev3.Address{Address: &corev3.Address_SocketAddress{SocketAddress: &corev3.SocketAddress{
				Protocol:      proto,
				Address:       e.Address,
				PortSpecifier: &corev3.SocketAddress_PortValue{PortValue: e.Port},
			}}},
		}
		if e.HealthPort != 0 && e.HealthPort != e.Port {
			ep.HealthCheckConfig = &endpointv3.Endpoint_HealthCheckConfig{PortValue: e.HealthPort}
		}
		lle.LbEndpoints[i] = &endpointv3.LbEndpoint{HostIdentifier: &endpointv3.LbEndpoint_Endpoint{Endpoint: ep}}
	}
	return lle
}

func secret(s *ir.Secret) *tlsv3.Secret {
	return &tlsv3.Secret{Name: s.Name, Type: &tlsv3.Secret_TlsCertificate{TlsCertificate: &tlsv3.TlsCertificate{
		CertificateChain: &corev3.DataSource{Specifier: &corev3.DataSource_InlineBytes{InlineBytes: s.Certificate}},
		PrivateKey:       &corev3.DataSource{Specifier: &corev3.DataSource_InlineBytes{InlineBytes: s.PrivateKey}},
	}}}
}

type named interface{ GetName() string }

func byName[T named](s []T) {
	slices.SortFunc(s, func(a, b T) int { return cmp.Compare(a.GetName(), b.GetName()) })
}

func sortByName(r *Resources) {
	byName(r.Listeners)
	byName(r.Routes)
	byName(r.Clusters)
	byName(r.Secrets)
	slices.SortFunc(r.Endpoints, func(a, b *endpointv3.ClusterLoadAssignment) int {
		return cmp.Compare(a.GetClusterName(), b.GetClusterName())
	})
}

// slowStart is Envoy's slow start of a round robin or least request
// cluster. The aggression is a runtime value, whose key Envoy requires.
func slowStart(s ir.SlowStart) *clusterv3.Cluster_SlowStartConfig {
	return &clusterv3.Cluster_SlowStartConfig{
		SlowStartWindow:  durationpb.New(s.Window),
		Aggression:       &corev3.RuntimeDouble{DefaultValue: s.Aggression, RuntimeKey: "isobar.slowstart.aggression"},
		MinWeightPercent: &typev3.Percent{Value: float64(s.MinWeightPercent)},
	}
}

// circuitBreakers are a cluster's limits, as Contour gives them to Envoy:
// those set at the default priority, the per-host connections apart.
func circuitBreakers(l ir.CircuitBreakers) *clusterv3.CircuitBreakers {
	u32 := func(v uint32) *wrapperspb.UInt32Value {
		if v == 0 {
			return nil
		}
		return wrapperspb.UInt32(v)
	}
	out := &clusterv3.CircuitBreakers{Thresholds: []*clusterv3.CircuitBreakers_Thresholds{{
		MaxConnections: u32(l.MaxConnections), MaxPendingRequests: u32(l.MaxPendingRequests),
		MaxRequests: u32(l.MaxRequests), MaxRetries: u32(l.MaxRetries), TrackRemaining: true,
	}}}
	if b := l.RetryBudget; b != (ir.RetryBudget{}) {
		out.Thresholds[0].RetryBudget = &clusterv3.CircuitBreakers_Thresholds_RetryBudget{
			BudgetPercent:       &typev3.Percent{Value: float64(b.Percent)},
			BudgetInterval:      durationpb.New(b.Interval),
			MinRetryConcurrency: wrapperspb.UInt32(b.MinRetries),
		}
	}
	if l.PerHostMaxConnections > 0 {
		out.PerHostThresholds = []*clusterv3.CircuitBreakers_Thresholds{{MaxConnections: u32(l.PerHostMaxConnections), TrackRemaining: true}}
	}
	return out
}

// withDefaultLimits fills the limits a cluster does not set with the
// profile's.
func withDefaultLimits(own, def ir.CircuitBreakers) ir.CircuitBreakers {
	own.MaxConnections = cmp.Or(own.MaxConnections, def.MaxConnections)
	own.MaxPendingRequests = cmp.Or(own.MaxPendingRequests, def.MaxPendingRequests)
	own.MaxRequests = cmp.Or(own.MaxRequests, def.MaxRequests)
	if own.RetryBudget == (ir.RetryBudget{}) {
		own.MaxRetries = cmp.Or(own.MaxRetries, def.MaxRetries)
	}
	own.PerHostMaxConnections = cmp.Or(own.PerHostMaxConnections, def.PerHostMaxConnections)
	return own
}
