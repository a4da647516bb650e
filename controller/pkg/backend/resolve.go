// Package backend resolves the backends routes of every API name (Service
// ports, XBackends, hosts Envoy resolves) into the clusters they use, and
// names those clusters once per translation. A route's rules say which
// backends; this package says whether each can be used, what cluster it
// is, and why not, so that the rules of the Gateway API, HTTPProxy and
// Ingress resolve their backends alike, and the engine keeps cluster specs
// without knowing any route's rules. Like the rule packages, it reads the
// snapshot only through an env.Env.
package backend

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"isobar.dev/api/refgrant"
	"isobar.dev/controller/pkg/backendtls"
	"isobar.dev/controller/pkg/condition"
	"isobar.dev/controller/pkg/env"
	"isobar.dev/controller/pkg/ir"
)

// ReasonBackendTLSPolicyNotMet is the route's ResolvedRefs reason for a
// backend whose BackendTLSPolicy cannot be met (its CA missing, say): the
// Gateway API lists no reason for it, and lets implementations add one.
const ReasonBackendTLSPolicyNotMet gatewayv1.RouteConditionReason = "BackendTLSPolicyNotMet"

// A Resolver resolves the backends of one route object (or one
// ExtensionService), and keeps what that found: the route's ResolvedRefs
// problems and the clusters its backends use.
type Resolver struct {
	// Env is what resolving reads through, recording for the engine.
	Env   env.Env
	Names *Names
	// Unresolved is the ResolvedRefs problem of the references found so
	// far, nil while every one resolves.
	Unresolved *condition.RouteProblem
	// Clusters are the clusters the resolved backends use, in the order
	// first used.
	Clusters []ClusterSpec
}

// NewResolver returns a Resolver for the backends of an object,
// reading through e and naming clusters from names.
func NewResolver(e env.Env, names *Names) *Resolver {
	return &Resolver{Env: e, Names: names}
}

// Report records a problem with one of the object's references.
func (r *Resolver) Report(p *condition.RouteProblem) { r.Unresolved = r.Unresolved.Join(p) }

// Use records a cluster the object uses.
func (r *Resolver) Use(s ClusterSpec) { r.Clusters = append(r.Clusters, s) }

// Backends are an object's resolved backends.
type Backends struct {
	Destination *ir.Destination
	// Unresolved is the ResolvedRefs problem of the backendRefs, if any.
	Unresolved *condition.RouteProblem
	Clusters   []ClusterSpec
}

// ForHTTP resolves the weighted backends of an HTTPProxy route, an
// Ingress path or an ExtensionService, an object of kind in namespace ns,
// into a destination: a ref that does not resolve keeps
// its weight, marked invalid, so that its share of requests gets a 500;
// Unresolved says why. Their refs carry no filters.
func ForHTTP(e env.Env, names *Names, kind, ns string, refs []Ref) Backends {
	r := NewResolver(e, names)
	d := r.Weighted(ns, kind, refs, nil)
	return Backends{Destination: d, Unresolved: r.Unresolved, Clusters: r.Clusters}
}

// ForStream resolves the backendRefs of a TLS, TCP or UDP route (or an
// HTTPProxy's tcpproxy) of kind in namespace ns. A
// connection cannot be answered with an error the way a request can, so
// invalid backends are left out; with none left the destination is empty
// and Envoy refuses the connections.
func ForStream(e env.Env, names *Names, kind, ns string, refs []gatewayv1.BackendRef, up Upstream) *Backends {
	r := NewResolver(e, names)
	d := &ir.Destination{}
	for _, ref := range refs {
		weight := weightOf(ref.Weight)
		name, ok := r.Resolve("", ns, kind, ref.BackendObjectReference, up)
		if !ok {
			continue
		}
		if weight > 0 {
			d.Backends = append(d.Backends, ir.WeightedCluster{Cluster: name, Weight: weight})
		}
	}
	return &Backends{Destination: d, Unresolved: r.Unresolved, Clusters: r.Clusters}
}

// weightOf is a backendRef's weight, 1 when unset. The schema allows 0 to
// 1,000,000; out of range is clamped.
func weightOf(w *int32) uint32 {
	if w == nil {
		return 1
	}
	return uint32(min(max(*w, 0), 1000000))
}

// Filters applies the filters of one backendRef to its weighted cluster;
// the route rules of the API own what a filter means.
type Filters func(wc *ir.WeightedCluster, filters []gatewayv1.HTTPRouteFilter) error

// Weighted resolves a rule's backendRefs into weighted clusters. A ref
// that does not resolve keeps its weight, marked invalid, so that its
// share of requests gets a 500 as the Gateway API asks; the reason goes to
// r. filters applies each ref's filters; nil refuses any.
func (r *Resolver) Weighted(fromNS, fromKind string, refs []Ref, filters Filters) *ir.Destination {
	d := &ir.Destination{}
	for i := range refs {
		ref := &refs[i]
		weight := weightOf(ref.Weight)
		name, ok := r.Resolve("", fromNS, fromKind, ref.BackendObjectReference, ref.Upstream)
		if !ok {
			d.Backends = append(d.Backends, ir.WeightedCluster{Weight: weight, Invalid: true})
			continue
		}
		wc := ir.WeightedCluster{Cluster: name, Weight: weight, RequestHeaders: ref.RequestHeaders, ResponseHeaders: ref.ResponseHeaders, CookieRewrites: ref.CookieRewrites, Hostname: ref.Hostname}
		var err error
		switch {
		case len(ref.Filters) == 0:
		case filters == nil:
			err = fmt.Errorf("filters are not supported on a backend of a %s", fromKind)
		default:
			// Its own variable, so that only a ref with filters puts its
			// weighted cluster on the heap.
			filtered := wc
			err = filters(&filtered, ref.Filters)
			wc = filtered
		}
		if err != nil {
			r.Report(condition.UnresolvedRef(gatewayv1.RouteReasonUnsupportedValue, fmt.Sprintf("backendRef %s: %v", ref.Name, err)))
			d.Backends = append(d.Backends, ir.WeightedCluster{Weight: weight, Invalid: true})
			continue
		}
		d.Backends = append(d.Backends, wc)
	}
	return d
}

// Resolve checks a backend reference from a route of kind fromKind in
// namespace fromNS and returns its cluster name, adding the cluster to the
// IR on first use, or false when the backend cannot be used. What it reads,
// the cluster it uses and why a reference does not resolve (its message
// prefixed with what, as "mirror: ") go to r. A backend whose
// BackendTLSPolicy is unusable resolves to nothing, a route problem too.
func (r *Resolver) Resolve(what, fromNS, fromKind string, ref gatewayv1.BackendObjectReference, up Upstream) (string, bool) {
	return r.ResolveAs(what, fromNS, fromKind, ref, up, fromKind == "GRPCRoute")
}

// ResolveAs is Resolve for a backend spoken to in gRPC (HTTP/2, whatever
// the Service says) or not.
func (r *Resolver) ResolveAs(what, fromNS, fromKind string, ref gatewayv1.BackendObjectReference, up Upstream, grpc bool) (string, bool) {
	unresolved := func(reason gatewayv1.RouteConditionReason, msg string) (string, bool) {
		r.Report(condition.UnresolvedRef(reason, what+msg))
		return "", false
	}
	group, kind := "", "Service"
	if ref.Group != nil {
		group = string(*ref.Group)
	}
	if ref.Kind != nil {
		kind = string(*ref.Kind)
	}
	if group == xbackendGroup && kind == "XBackend" && up == (Upstream{}) {
		return r.resolveXBackend(what, fromNS, fromKind, ref, grpc)
	}
	if group != "" || kind != "Service" {
		return unresolved(gatewayv1.RouteReasonInvalidKind, fmt.Sprintf("backendRef %s: kind %s of group %q is not supported; use a core Service or an XBackend", ref.Name, kind, group))
	}
	ns := fromNS
	if ref.Namespace != nil {
		ns = string(*ref.Namespace)
	}
	if ns != fromNS && !r.Env.Granted(refgrant.From{Group: gatewayv1.GroupName, Kind: fromKind, Namespace: fromNS}, ns, refgrant.To{Kind: "Service", Name: string(ref.Name)}) {
		return unresolved(gatewayv1.RouteReasonRefNotPermitted, fmt.Sprintf("backendRef to Service %s/%s is not permitted: no ReferenceGrant in namespace %s allows it", ns, ref.Name, ns))
	}
	svc, ok := r.Env.Service(ns, string(ref.Name))
	if !ok {
		// The policies for the Service hear of it from the Gateway.
		r.Use(ClusterSpec{Name: "absent/" + ns + "/" + string(ref.Name), Rejected: true, Absent: &types.NamespacedName{Namespace: ns, Name: string(ref.Name)}})
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
	if grpc {
		suffix = "/grpc" // gRPC needs HTTP/2 whatever the Service says
	}
	spec := ClusterSpec{Service: svc, Port: sp, Protocol: want, GRPC: grpc}
	if up != (Upstream{}) {
		suffix, spec.Upstream = up.suffix(), r.Names.upstream(up)
	}
	spec.Name = r.Names.cluster(ns, string(ref.Name), int32(*ref.Port), suffix)
	// A route that says how to speak to its backend is not overridden by
	// a BackendTLSPolicy.
	if fromKind != "UDPRoute" && up.Protocol == "" {
		spec.TLS = backendtls.For(r.Env, types.NamespacedName{Namespace: ns, Name: string(ref.Name)}, sp.Name)
		if spec.TLS != nil && spec.TLS.TLS == nil {
			// Never fall back to plaintext: the backend is unusable, as
			// the route's ResolvedRefs says (the HTTPBackendRef godoc asks
			// it), and the policy's status says why.
			spec.Rejected = true
			r.Use(spec)
			why := "it is not accepted"
			if p := spec.TLS.Problem; p != nil && p.Message != "" {
				why = p.Message
			}
			r.Report(condition.UnresolvedRef(ReasonBackendTLSPolicyNotMet, fmt.Sprintf("%sbackendRef %s: Service %s/%s cannot be reached as its BackendTLSPolicy %s asks: %s",
				what, ref.Name, ns, ref.Name, spec.TLS.Object.Name, why)))
			return "", false
		}
	}
	r.Use(spec)
	return spec.Name, true
}

// AllInvalid reports whether no backend of a destination resolved: the
// route then answers 500 itself.
func AllInvalid(d *ir.Destination) bool {
	for _, b := range d.Backends {
		if !b.Invalid && b.Weight > 0 {
			return false
		}
	}
	return true
}
