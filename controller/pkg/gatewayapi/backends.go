package gatewayapi

import (
	"cmp"
	"net/netip"
	"slices"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/utils/ptr"

	"isobar.dev/controller/pkg/backend"
	"isobar.dev/controller/pkg/circuitbreaker"
	"isobar.dev/controller/pkg/ir"
)

// ensureCluster builds the cluster of a spec the routes use, once per
// translation, and records the Gateway as an ancestor of the
// BackendTLSPolicy it applies. A shared cluster's members must be built
// first.
func (t *gatewayTranslator) ensureCluster(s backend.ClusterSpec) {
	if s.Rejected {
		return
	}
	if _, done := t.clusters[s.Name]; done {
		return
	}
	switch {
	case s.XBackend != nil:
		t.buildExternal(s.Name, s.XBackend)
		return
	case s.Shares != nil:
		t.buildShared(s)
		return
	case s.Service == nil:
		c := &ir.Cluster{Name: s.Name}
		s.Upstream.Apply(c, s.HostPort)
		t.clusters[s.Name] = c
		return
	}
	c := t.cluster(s.Name, s.Service, s.Port, s.Protocol)
	c.HTTP2 = c.HTTP2 || s.GRPC
	if s.Upstream != nil {
		s.Upstream.Apply(c, s.Port.Port)
		if hp := s.Upstream.HealthPort; hp != 0 && hp != s.Port.Port && !c.DNS {
			for _, p := range s.Service.Spec.Ports {
				if p.Port == hp {
					c.Source.HealthPortName = p.Name
				}
			}
			c.Endpoints = Endpoints(c.Source, t.endpoints(key(s.Service.Namespace, s.Service.Name)))
		}
	}
	if c.TLS != nil && s.TLS == nil && t.backendCert != "" {
		c.TLS.ClientCertificate = t.backendCert
	}
	if s.TLS != nil {
		c.TLS = s.TLS.TLS
		if t.backendCert != "" {
			tls := *s.TLS.TLS
			tls.ClientCertificate = t.backendCert
			c.TLS = &tls
		}
	}
	if p := t.traffic[key(s.Service.Namespace, s.Service.Name)]; p != nil && !c.UDP && p.Budget != nil {
		c.CircuitBreakers.RetryBudget = *p.Budget
	}
	t.clusters[s.Name] = c
}

// cluster builds a Service port's cluster from its EndpointSlices: the ready
// endpoints, on the endpoint port whose name matches the Service port's.
func (t *gatewayTranslator) cluster(name string, svc *corev1.Service, sp *corev1.ServicePort, want corev1.Protocol) *ir.Cluster {
	c := &ir.Cluster{Name: name, UDP: want == corev1.ProtocolUDP}
	if ap := sp.AppProtocol; ap != nil && (*ap == "kubernetes.io/h2c" || *ap == "h2c") {
		c.HTTP2 = true
	}
	c.Source = ir.ClusterSource{Namespace: svc.Namespace, Service: svc.Name, PortName: sp.Name, Protocol: string(want)}
	c.CircuitBreakers, _ = circuitbreaker.Of(svc)
	c.Endpoints = Endpoints(c.Source, t.endpoints(key(svc.Namespace, svc.Name)))
	return c
}

// Endpoints are the ready endpoints of a Service port in its EndpointSlices,
// on the endpoint port whose name and protocol match the Service port's,
// sorted and without duplicates. Both a full translation and the
// endpoint-only fast path of the live controller use it.
func Endpoints(src ir.ClusterSource, endpointSlices []*discoveryv1.EndpointSlice) []ir.Endpoint {
	var out []ir.Endpoint
	seen := map[ir.Endpoint]bool{}
	for _, s := range endpointSlices {
		if s.AddressType == discoveryv1.AddressTypeFQDN || s.Namespace != src.Namespace || s.Labels[discoveryv1.LabelServiceName] != src.Service {
			continue
		}
		var port, health int32 = -1, 0
		for _, p := range s.Ports {
			proto := ptr.Deref(p.Protocol, "")
			if proto == "" {
				proto = corev1.ProtocolTCP
			}
			if p.Port != nil && string(proto) == src.Protocol {
				switch ptr.Deref(p.Name, "") {
				case src.PortName:
					port = *p.Port
				case src.HealthPortName:
					health = *p.Port
				}
			}
		}
		if port < 1 || port > 65535 || src.HealthPortName != "" && (health < 1 || health > 65535) {
			// Without its health port an endpoint would be checked on
			// its traffic port: left out, as Contour's endpoints are.
			continue
		}
		for _, e := range s.Endpoints {
			if e.Conditions.Ready != nil && !*e.Conditions.Ready {
				continue
			}
			for _, addr := range e.Addresses {
				// The API server admits only IPs here; offline input
				// may hold anything, and Envoy refuses a cluster with
				// an address that is none.
				if _, err := netip.ParseAddr(addr); err != nil {
					continue
				}
				ep := ir.Endpoint{Address: addr, Port: uint32(port), HealthPort: uint32(health)}
				if !seen[ep] {
					seen[ep] = true
					out = append(out, ep)
				}
			}
		}
	}
	slices.SortFunc(out, func(a, b ir.Endpoint) int {
		return cmp.Or(cmp.Compare(a.Address, b.Address), cmp.Compare(a.Port, b.Port))
	})
	return out
}

// buildShared builds a shared cluster from its members' clusters: spoken
// to as its first member is (every member is spoken to alike), with each
// member's endpoints a locality of its weight.
func (t *gatewayTranslator) buildShared(s backend.ClusterSpec) {
	var c *ir.Cluster
	for _, m := range s.Shares.Members {
		member := t.clusters[m.Cluster]
		if member == nil {
			continue
		}
		if c == nil {
			cp := *member
			cp.Name, cp.Endpoints, cp.Source, cp.HealthCheck = s.Name, nil, ir.ClusterSource{}, nil
			c = &cp
		}
		c.Shares = append(c.Shares, ir.Share{Cluster: m.Cluster, Weight: m.Weight, Endpoints: member.Endpoints, Source: member.Source})
	}
	if c == nil {
		c = &ir.Cluster{Name: s.Name}
	}
	t.clusters[s.Name] = c
}

// buildExternal builds the cluster of an XBackend: its host, which Envoy
// resolves, over TLS when it asks, presenting its client certificate or
// else the Gateway's backend one.
func (t *gatewayTranslator) buildExternal(name string, x *backend.ExternalBackend) {
	c := &ir.Cluster{Name: name, HTTP2: x.HTTP2, DNS: true, Endpoints: []ir.Endpoint{{Address: x.Host, Port: uint32(x.Port)}}}
	if x.TLS != nil {
		tls := *x.TLS
		switch {
		case x.ClientCertificate != nil:
			s := x.ClientCertificate
			tls.ClientCertificate = s.Namespace + "/" + s.Name
			if _, done := t.secrets[tls.ClientCertificate]; !done {
				t.secrets[tls.ClientCertificate] = &ir.Secret{Name: tls.ClientCertificate, Certificate: s.Data[corev1.TLSCertKey], PrivateKey: s.Data[corev1.TLSPrivateKeyKey]}
			}
		case t.backendCert != "":
			tls.ClientCertificate = t.backendCert
		}
		c.TLS = &tls
	}
	t.clusters[name] = c
}

// reportPolicies records this Gateway among the ancestors of what its
// clusters use: the BackendTLSPolicies, XBackendTrafficPolicies and
// XBackends (with their conditions), and, for a Service that does not
// exist, the policies targeting it (TargetNotFound). Building clusters
// writes no status; this is where cluster specs reach it.
func (t *gatewayTranslator) reportPolicies(specs []backend.ClusterSpec) {
	for _, s := range specs {
		switch {
		case s.XBackend != nil:
			t.backendAncestor(s.XBackend)
			continue
		case s.Rejected && s.Absent != nil:
			t.targetNotFound(*s.Absent)
			continue
		}
		if s.TLS != nil {
			t.policyAncestor(s.TLS)
		}
		// The retry budget applies to the cluster of a Service used.
		if !s.Rejected && s.Service != nil && s.Protocol != corev1.ProtocolUDP {
			if p := t.traffic[key(s.Service.Namespace, s.Service.Name)]; p != nil {
				t.trafficAncestor(p)
			}
		}
	}
}
