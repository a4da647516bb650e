package gatewayapi

import (
	"cmp"
	"fmt"
	"net/netip"
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"isobar.dev/api/refgrant"
	"isobar.dev/controller/pkg/backendtls"
	"isobar.dev/controller/pkg/condition"
	"isobar.dev/controller/pkg/ir"
)

// backendRef is what weighting needs of an HTTP or gRPC backendRef.
type backendRef struct {
	ref     gatewayv1.BackendObjectReference
	weight  *int32
	filters []gatewayv1.HTTPRouteFilter
}

// httpBackends resolves a rule's backendRefs into weighted clusters. A ref
// that does not resolve keeps its weight, marked invalid, so that its share
// of requests gets a 500 as the Gateway API asks; the reason goes to
// ev.
func (t *gatewayTranslator) httpBackends(ev *ruleEval, fromNS, fromKind string, refs []backendRef) *ir.Destination {
	d := &ir.Destination{}
	for _, ref := range refs {
		weight := uint32(1)
		if ref.weight != nil {
			// The schema allows 0 to 1,000,000; out of range is clamped.
			weight = uint32(min(max(*ref.weight, 0), 1000000))
		}
		name, ok := t.resolveBackend(ev, "", fromNS, fromKind, ref.ref)
		if !ok {
			d.Backends = append(d.Backends, ir.WeightedCluster{Weight: weight, Invalid: true})
			continue
		}
		wc := ir.WeightedCluster{Cluster: name, Weight: weight}
		if err := backendFilters(&wc, ref.filters); err != nil {
			ev.report(condition.UnresolvedRef(gatewayv1.RouteReasonUnsupportedValue, fmt.Sprintf("backendRef %s: %v", ref.ref.Name, err)))
			d.Backends = append(d.Backends, ir.WeightedCluster{Weight: weight, Invalid: true})
			continue
		}
		d.Backends = append(d.Backends, wc)
	}
	return d
}

// resolveBackend checks a backend reference from a route of kind fromKind in
// namespace fromNS and returns its cluster name, adding the cluster to the
// IR on first use, or false when the backend cannot be used. What it reads,
// the cluster it uses and why a reference does not resolve (its message
// prefixed with what, as "mirror: ") go to ev. A backend whose
// BackendTLSPolicy is unusable resolves to nothing, with no route problem:
// the policy's status says why.
func (t *gatewayTranslator) resolveBackend(ev *ruleEval, what, fromNS, fromKind string, ref gatewayv1.BackendObjectReference) (string, bool) {
	unresolved := func(reason gatewayv1.RouteConditionReason, msg string) (string, bool) {
		ev.report(condition.UnresolvedRef(reason, what+msg))
		return "", false
	}
	group, kind := "", "Service"
	if ref.Group != nil {
		group = string(*ref.Group)
	}
	if ref.Kind != nil {
		kind = string(*ref.Kind)
	}
	if group != "" || kind != "Service" {
		return unresolved(gatewayv1.RouteReasonInvalidKind, fmt.Sprintf("backendRef %s: kind %s of group %q is not supported; use a core Service", ref.Name, kind, group))
	}
	ns := fromNS
	if ref.Namespace != nil {
		ns = string(*ref.Namespace)
	}
	if ns != fromNS && !ev.env.Granted(refgrant.From{Group: gatewayv1.GroupName, Kind: fromKind, Namespace: fromNS}, ns, refgrant.To{Kind: "Service", Name: string(ref.Name)}) {
		return unresolved(gatewayv1.RouteReasonRefNotPermitted, fmt.Sprintf("backendRef to Service %s/%s is not permitted: no ReferenceGrant in namespace %s allows it", ns, ref.Name, ns))
	}
	svc, ok := ev.env.Service(ns, string(ref.Name))
	if !ok {
		return unresolved(gatewayv1.RouteReasonBackendNotFound, fmt.Sprintf("Service %s/%s does not exist", ns, ref.Name))
	}
	if ref.Port == nil {
		return unresolved(gatewayv1.RouteReasonUnsupportedValue, fmt.Sprintf("backendRef to Service %s/%s needs a port", ns, ref.Name))
	}
	// UDPRoutes need the Service's UDP port of that number, every other
	// route its TCP port.
	want, suffix := corev1.ProtocolTCP, ""
	if fromKind == "UDPRoute" {
		want, suffix = corev1.ProtocolUDP, "/udp"
	}
	var sp *corev1.ServicePort
	for i := range svc.Spec.Ports {
		p := &svc.Spec.Ports[i]
		proto := p.Protocol
		if proto == "" {
			proto = corev1.ProtocolTCP
		}
		if p.Port == int32(*ref.Port) && proto == want {
			sp = p
		}
	}
	if sp == nil {
		return unresolved(gatewayv1.RouteReasonBackendNotFound, fmt.Sprintf("Service %s/%s has no %s port %d", ns, ref.Name, want, *ref.Port))
	}
	if fromKind == "GRPCRoute" {
		suffix = "/grpc" // gRPC needs HTTP/2 whatever the Service says
	}
	spec := clusterSpec{
		name: t.clusterName(ns, string(ref.Name), int32(*ref.Port), suffix),
		svc:  svc, port: sp, want: want, grpc: fromKind == "GRPCRoute",
	}
	if fromKind != "UDPRoute" {
		spec.tls = backendtls.For(ev.env, key(ns, string(ref.Name)), sp.Name)
		if spec.tls != nil && spec.tls.TLS == nil {
			// Never fall back to plaintext: the backend is unusable and
			// the policy's status says why.
			spec.rejected = true
			t.ensureCluster(spec)
			ev.cluster(spec)
			return "", false
		}
	}
	t.ensureCluster(spec)
	ev.cluster(spec)
	return spec.name, true
}

// clusterName names the cluster of a Service's port,
// "<namespace>/<name>/<port>[/udp|/grpc]". A cluster already in the IR
// gives its own name: most backends of a large Gateway share a few
// clusters, and building the name anew for each cost two allocations.
func (t *gatewayTranslator) clusterName(ns, name string, port int32, suffix string) string {
	var buf [128]byte
	b := append(buf[:0], ns...)
	b = append(b, '/')
	b = append(b, name...)
	b = append(b, '/')
	b = strconv.AppendInt(b, int64(port), 10)
	b = append(b, suffix...)
	if c, ok := t.clusters[string(b)]; ok {
		return c.Name
	}
	return string(b)
}

// clusterSpec is what a cluster is built from, kept with cached rules so
// that a cache hit still builds the clusters, with this snapshot's
// endpoints.
type clusterSpec struct {
	name string
	svc  *corev1.Service
	port *corev1.ServicePort
	want corev1.Protocol
	grpc bool
	tls  *backendtls.Policy
	// rejected says the BackendTLSPolicy is unusable, so there is no
	// cluster, only the policy's status to record.
	rejected bool
}

func (t *gatewayTranslator) ensureCluster(s clusterSpec) {
	if s.rejected {
		t.policyAncestor(s.tls)
		return
	}
	if _, done := t.clusters[s.name]; done {
		return
	}
	c := t.cluster(s.name, s.svc, s.port, s.want)
	c.HTTP2 = c.HTTP2 || s.grpc
	if s.tls != nil {
		c.TLS = s.tls.TLS
		if t.backendCert != "" {
			tls := *s.tls.TLS
			tls.ClientCertificate = t.backendCert
			c.TLS = &tls
		}
		t.policyAncestor(s.tls)
	}
	t.clusters[s.name] = c
}

// cluster builds a Service port's cluster from its EndpointSlices: the ready
// endpoints, on the endpoint port whose name matches the Service port's.
func (t *gatewayTranslator) cluster(name string, svc *corev1.Service, sp *corev1.ServicePort, want corev1.Protocol) *ir.Cluster {
	c := &ir.Cluster{Name: name, UDP: want == corev1.ProtocolUDP}
	if ap := sp.AppProtocol; ap != nil && (*ap == "kubernetes.io/h2c" || *ap == "h2c") {
		c.HTTP2 = true
	}
	c.Source = ir.ClusterSource{Namespace: svc.Namespace, Service: svc.Name, PortName: sp.Name, Protocol: string(want)}
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
		var port int32 = -1
		for _, p := range s.Ports {
			proto := deref(p.Protocol)
			if proto == "" {
				proto = corev1.ProtocolTCP
			}
			if p.Port != nil && deref(p.Name) == src.PortName && string(proto) == src.Protocol {
				port = *p.Port
			}
		}
		if port < 1 || port > 65535 {
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
				ep := ir.Endpoint{Address: addr, Port: uint32(port)}
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

// backendFilters applies the filters of one backendRef. Envoy can change
// headers per weighted cluster; other filters cannot apply to one backend's
// share and are refused.
func backendFilters(wc *ir.WeightedCluster, filters []gatewayv1.HTTPRouteFilter) error {
	for _, f := range filters {
		var err error
		switch {
		case f.Type == gatewayv1.HTTPRouteFilterRequestHeaderModifier && f.RequestHeaderModifier != nil:
			wc.RequestHeaders, err = mergeHeaders(wc.RequestHeaders, f.RequestHeaderModifier)
		case f.Type == gatewayv1.HTTPRouteFilterResponseHeaderModifier && f.ResponseHeaderModifier != nil:
			wc.ResponseHeaders, err = mergeHeaders(wc.ResponseHeaders, f.ResponseHeaderModifier)
		default:
			err = fmt.Errorf("filter %s is not supported on a backendRef; use RequestHeaderModifier or ResponseHeaderModifier", f.Type)
		}
		if err != nil {
			return err
		}
	}
	return nil
}
