package envoysim

import (
	"crypto/tls"
	"fmt"
	"net"
	"strconv"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	httpv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/upstreams/http/v3"
)

// clusterFieldsKnown are Cluster fields that do not change which endpoints
// a request may reach or how Envoy speaks to them, beyond what upstream
// reports.
var clusterFieldsKnown = []string{
	"name", "type", "eds_cluster_config", "load_assignment", "transport_socket", "typed_extension_protocol_options",
	"connect_timeout", "lb_policy", "circuit_breakers", "common_lb_config", "health_checks", "outlier_detection",
	"per_connection_buffer_limit_bytes", "dns_lookup_family", "ring_hash_lb_config", "upstream_connection_options",
	"ignore_health_on_host_removal", "close_connections_on_host_health_failure", "alt_stat_name", "metadata",
	"round_robin_lb_config", "least_request_lb_config",
}

// upstream fills in a backend's endpoints and TLS from its cluster and
// ClusterLoadAssignment. A missing cluster is answered with notFound; a
// cluster without healthy endpoints with 503 ("no healthy upstream").
func (s *Simulator) upstream(b *Backend, notFound int) error {
	c := s.clusters[b.Cluster]
	if c == nil {
		b.Status = notFound
		return nil
	}
	if err := understand(c, clusterFieldsKnown...); err != nil {
		return err
	}
	switch c.GetLbPolicy() {
	case clusterv3.Cluster_ROUND_ROBIN, clusterv3.Cluster_LEAST_REQUEST, clusterv3.Cluster_RANDOM:
		// Any endpoint may get the request; which is the policy's.
		b.LoadBalancer = c.GetLbPolicy().String()
	case clusterv3.Cluster_RING_HASH:
		// The request's hash picks the endpoint (see Pick).
		if cfg := c.GetRingHashLbConfig(); cfg != nil {
			if err := understand(cfg); err != nil {
				return err
			}
		}
		b.LoadBalancer = c.GetLbPolicy().String()
	default:
		return errUnsupportedf("cluster %s: lb_policy %v", c.GetName(), c.GetLbPolicy())
	}
	var err error
	if b.CircuitBreakers, err = circuitBreakersOf(c); err != nil {
		return fmt.Errorf("cluster %s: %w", c.GetName(), err)
	}
	if b.SlowStart, err = slowStartOf(c); err != nil {
		return fmt.Errorf("cluster %s: %w", c.GetName(), err)
	}
	var cla *endpointv3.ClusterLoadAssignment
	switch c.GetType() {
	case clusterv3.Cluster_EDS:
		name := c.GetEdsClusterConfig().GetServiceName()
		if name == "" {
			name = c.GetName()
		}
		if cla = s.endpoints[name]; cla == nil {
			return fmt.Errorf("cluster %s: endpoints %q are not served: Envoy keeps the cluster warming", c.GetName(), name)
		}
	case clusterv3.Cluster_STATIC, clusterv3.Cluster_STRICT_DNS:
		// The data plane resolves a DNS cluster's names as it dials.
		cla = c.GetLoadAssignment()
	default:
		return errUnsupportedf("cluster %s: type %v", c.GetName(), c.GetType())
	}
	var eps []string
	eps, err = endpoints(cla)
	if err != nil {
		return fmt.Errorf("cluster %s: %w", c.GetName(), err)
	}
	b.Endpoints = eps
	if b.HealthPorts, err = healthPorts(cla); err != nil {
		return fmt.Errorf("cluster %s: %w", c.GetName(), err)
	}
	if b.HealthCheck, err = healthCheckOf(c); err != nil {
		return fmt.Errorf("cluster %s: %w", c.GetName(), err)
	}
	if lb := c.GetCommonLbConfig(); lb != nil {
		if err := understand(lb, "locality_weighted_lb_config", "healthy_panic_threshold"); err != nil {
			return err
		}
		if lb.GetLocalityWeightedLbConfig() != nil {
			if b.Localities, err = localities(cla); err != nil {
				return fmt.Errorf("cluster %s: %w", c.GetName(), err)
			}
		}
	}
	if len(eps) == 0 {
		b.Status = 503
	}
	if ts := c.GetTransportSocket(); ts != nil {
		if b.TLS, err = s.upstreamTLS(ts); err != nil {
			return fmt.Errorf("cluster %s: %w", c.GetName(), err)
		}
	}
	if opts, ok := c.GetTypedExtensionProtocolOptions()["envoy.extensions.upstreams.http.v3.HttpProtocolOptions"]; ok {
		po, err := unpack[httpv3.HttpProtocolOptions](opts, "cluster "+c.GetName()+" protocol options")
		if err != nil {
			return err
		}
		if err := understand(po, "explicit_http_config", "common_http_protocol_options"); err != nil {
			return err
		}
		if err := understand(po.GetCommonHttpProtocolOptions(), "idle_timeout", "max_requests_per_connection"); err != nil {
			return err
		}
		b.HTTP2 = po.GetExplicitHttpConfig().GetHttp2ProtocolOptions() != nil
		b.ConnectionIdle = po.GetCommonHttpProtocolOptions().GetIdleTimeout().AsDuration()
	}
	return nil
}

// endpoints are the ready endpoints of an assignment: Envoy sends nothing
// to UNHEALTHY, DRAINING or TIMEOUT ones.
func endpoints(cla *endpointv3.ClusterLoadAssignment) ([]string, error) {
	if err := understand(cla, "cluster_name", "endpoints", "policy"); err != nil {
		return nil, err
	}
	out := []string{}
	for _, lle := range cla.GetEndpoints() {
		for _, e := range lle.GetLbEndpoints() {
			switch e.GetHealthStatus() {
			case corev3.HealthStatus_UNHEALTHY, corev3.HealthStatus_DRAINING, corev3.HealthStatus_TIMEOUT:
				continue
			}
			sa := e.GetEndpoint().GetAddress().GetSocketAddress()
			if sa == nil {
				return nil, errUnsupportedf("an endpoint without a socket address")
			}
			out = append(out, net.JoinHostPort(sa.GetAddress(), strconv.FormatUint(uint64(sa.GetPortValue()), 10)))
		}
	}
	return out, nil
}

// healthPorts are the endpoints an assignment has Envoy check on another
// port (health_check_config), with that port.
func healthPorts(cla *endpointv3.ClusterLoadAssignment) (map[string]uint32, error) {
	var out map[string]uint32
	for _, lle := range cla.GetEndpoints() {
		for _, e := range lle.GetLbEndpoints() {
			ep := e.GetEndpoint()
			if err := understand(ep, "address", "health_check_config"); err != nil {
				return nil, err
			}
			hc := ep.GetHealthCheckConfig()
			if hc == nil {
				continue
			}
			if err := understand(hc, "port_value"); err != nil {
				return nil, err
			}
			sa := ep.GetAddress().GetSocketAddress()
			if out == nil {
				out = map[string]uint32{}
			}
			out[net.JoinHostPort(sa.GetAddress(), strconv.FormatUint(uint64(sa.GetPortValue()), 10))] = hc.GetPortValue()
		}
	}
	return out, nil
}

// localities are an assignment's weighted localities, for a cluster with
// locality weighted load balancing: a locality without a weight or without
// a healthy endpoint gets no traffic (Envoy's locality weighted LB).
func localities(cla *endpointv3.ClusterLoadAssignment) ([]Locality, error) {
	var out []Locality
	for _, lle := range cla.GetEndpoints() {
		eps, err := endpoints(&endpointv3.ClusterLoadAssignment{Endpoints: []*endpointv3.LocalityLbEndpoints{lle}})
		if err != nil {
			return nil, err
		}
		w := lle.GetLoadBalancingWeight().GetValue()
		if w == 0 || len(eps) == 0 {
			continue
		}
		out = append(out, Locality{Weight: w, Endpoints: eps})
	}
	return out, nil
}

// upstreamTLS reads an UpstreamTlsContext as data.
func (s *Simulator) upstreamTLS(ts *corev3.TransportSocket) (*UpstreamTLS, error) {
	if ts.GetName() != "envoy.transport_sockets.tls" {
		return nil, errUnsupportedf("transport socket %s", ts.GetName())
	}
	ctx, err := unpack[tlsv3.UpstreamTlsContext](ts.GetTypedConfig(), "upstream transport socket")
	if err != nil {
		return nil, err
	}
	if err := understand(ctx, "common_tls_context", "sni"); err != nil {
		return nil, err
	}
	cc := ctx.GetCommonTlsContext()
	if err := understand(cc, "tls_params", "alpn_protocols", "tls_certificate_sds_secret_configs", "validation_context",
		"validation_context_sds_secret_config", "combined_validation_context"); err != nil {
		return nil, err
	}
	out := &UpstreamTLS{SNI: ctx.GetSni(), ALPN: cc.GetAlpnProtocols()}
	// Envoy's client defaults are TLS 1.2 at least and at most.
	if out.MinVersion, out.MaxVersion, err = tlsVersions(cc.GetTlsParams(), tls.VersionTLS12, tls.VersionTLS12); err != nil {
		return nil, err
	}
	for _, sds := range cc.GetTlsCertificateSdsSecretConfigs() {
		secret, ok := s.secrets[sds.GetName()]
		if !ok {
			return nil, fmt.Errorf("client certificate secret %q is not served: Envoy keeps the cluster warming", sds.GetName())
		}
		out.ClientCertificate = sds.GetName()
		out.ClientCertificatePEM = secret.GetTlsCertificate().GetCertificateChain().GetInlineBytes()
	}
	switch v := cc.GetValidationContextType().(type) {
	case *tlsv3.CommonTlsContext_ValidationContextSdsSecretConfig:
		out.ValidationContext = v.ValidationContextSdsSecretConfig.GetName()
		if _, ok := s.secrets[out.ValidationContext]; !ok {
			return nil, fmt.Errorf("validation context secret %q is not served", out.ValidationContext)
		}
	case *tlsv3.CommonTlsContext_ValidationContext:
		out.ValidationContext = "(inline)"
		for _, m := range v.ValidationContext.GetMatchTypedSubjectAltNames() {
			out.SubjectAltNames = append(out.SubjectAltNames, m.GetMatcher().GetExact())
		}
	case *tlsv3.CommonTlsContext_CombinedValidationContext:
		out.ValidationContext = v.CombinedValidationContext.GetValidationContextSdsSecretConfig().GetName()
		for _, m := range v.CombinedValidationContext.GetDefaultValidationContext().GetMatchTypedSubjectAltNames() {
			out.SubjectAltNames = append(out.SubjectAltNames, m.GetMatcher().GetExact())
		}
	}
	return out, nil
}
