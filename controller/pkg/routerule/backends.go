package routerule

import (
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"k8s.io/apimachinery/pkg/types"

	"isobar.dev/api/refgrant"
	"isobar.dev/controller/pkg/backendtls"
	"isobar.dev/controller/pkg/condition"
	"isobar.dev/controller/pkg/ir"
)

// ReasonBackendTLSPolicyNotMet is the route's ResolvedRefs reason for a
// backend whose BackendTLSPolicy cannot be met (its CA missing, say): the
// Gateway API lists no reason for it, and lets implementations add one.
const ReasonBackendTLSPolicyNotMet gatewayv1.RouteConditionReason = "BackendTLSPolicyNotMet"

// backendRef is what weighting needs of an HTTP or gRPC backendRef.
type backendRef struct {
	ref      gatewayv1.BackendObjectReference
	weight   *int32
	filters  []gatewayv1.HTTPRouteFilter
	upstream Upstream
	// requestHeaders and responseHeaders are the backend's header
	// changes, when given as such rather than as filters.
	requestHeaders, responseHeaders *ir.HeaderModifier
	cookieRewrites                  []ir.CookieRewrite
	hostname                        string
}

// weightOf is a backendRef's weight, 1 when unset. The schema allows 0 to
// 1,000,000; out of range is clamped.
func weightOf(w *int32) uint32 {
	if w == nil {
		return 1
	}
	return uint32(min(max(*w, 0), 1000000))
}

// httpBackends resolves a rule's backendRefs into weighted clusters. A ref
// that does not resolve keeps its weight, marked invalid, so that its share
// of requests gets a 500 as the Gateway API asks; the reason goes to
// ev.
func httpBackends(ev *eval, fromNS, fromKind string, refs []backendRef) *ir.Destination {
	d := &ir.Destination{}
	for _, ref := range refs {
		weight := weightOf(ref.weight)
		name, ok := resolveBackend(ev, "", fromNS, fromKind, ref.ref, ref.upstream)
		if !ok {
			d.Backends = append(d.Backends, ir.WeightedCluster{Weight: weight, Invalid: true})
			continue
		}
		wc := ir.WeightedCluster{Cluster: name, Weight: weight, RequestHeaders: ref.requestHeaders, ResponseHeaders: ref.responseHeaders, CookieRewrites: ref.cookieRewrites, Hostname: ref.hostname}
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
// BackendTLSPolicy is unusable resolves to nothing, a route problem too.
func resolveBackend(ev *eval, what, fromNS, fromKind string, ref gatewayv1.BackendObjectReference, up Upstream) (string, bool) {
	return resolve(ev, what, fromNS, fromKind, ref, up, fromKind == "GRPCRoute")
}

// resolve is resolveBackend for a backend spoken to in gRPC (HTTP/2,
// whatever the Service says) or not.
func resolve(ev *eval, what, fromNS, fromKind string, ref gatewayv1.BackendObjectReference, up Upstream, grpc bool) (string, bool) {
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
	if group == xbackendGroup && kind == "XBackend" && up == (Upstream{}) {
		return resolveXBackend(ev, what, fromNS, fromKind, ref, grpc)
	}
	if group != "" || kind != "Service" {
		return unresolved(gatewayv1.RouteReasonInvalidKind, fmt.Sprintf("backendRef %s: kind %s of group %q is not supported; use a core Service or an XBackend", ref.Name, kind, group))
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
		// The policies for the Service hear of it from the Gateway.
		ev.cluster(ClusterSpec{Name: "absent/" + ns + "/" + string(ref.Name), Rejected: true, Absent: &types.NamespacedName{Namespace: ns, Name: string(ref.Name)}})
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
		suffix, spec.Upstream = up.suffix(), ev.names.upstream(up)
	}
	spec.Name = ev.names.cluster(ns, string(ref.Name), int32(*ref.Port), suffix)
	// A route that says how to speak to its backend is not overridden by
	// a BackendTLSPolicy.
	if fromKind != "UDPRoute" && up.Protocol == "" {
		spec.TLS = backendtls.For(ev.env, types.NamespacedName{Namespace: ns, Name: string(ref.Name)}, sp.Name)
		if spec.TLS != nil && spec.TLS.TLS == nil {
			// Never fall back to plaintext: the backend is unusable, as
			// the route's ResolvedRefs says (the HTTPBackendRef godoc asks
			// it), and the policy's status says why.
			spec.Rejected = true
			ev.cluster(spec)
			why := "it is not accepted"
			if c := spec.TLS.Conditions.Get(gatewayv1.PolicyConditionAccepted); c != nil && c.Message != "" {
				why = c.Message
			}
			ev.report(condition.UnresolvedRef(ReasonBackendTLSPolicyNotMet, fmt.Sprintf("%sbackendRef %s: Service %s/%s cannot be reached as its BackendTLSPolicy %s asks: %s",
				what, ref.Name, ns, ref.Name, spec.TLS.Object.Name, why)))
			return "", false
		}
	}
	ev.cluster(spec)
	return spec.Name, true
}

// Names holds the cluster names of one translation: most backends of a
// large Gateway share a few clusters, and building a name anew for each
// reference costs an allocation. The zero value is ready to use; a nil
// *Names builds every name anew.
type Names struct {
	m            map[string]string
	upstreams    map[Upstream]*Upstream
	healthChecks map[string]*ir.HealthCheck
	shared       map[string]*Shares
}

// HealthCheck interns a health check, so that Upstreams with equal
// checks are equal.
func (n *Names) HealthCheck(h *ir.HealthCheck) *ir.HealthCheck {
	if n == nil || h == nil {
		return h
	}
	k := h.Key()
	if p, ok := n.healthChecks[k]; ok {
		return p
	}
	if n.healthChecks == nil {
		n.healthChecks = map[string]*ir.HealthCheck{}
	}
	n.healthChecks[k] = h
	return h
}

// upstream interns u: a ClusterSpec holds a pointer, which keeps it small
// for the many that have none, and equal Upstreams compare equal.
func (n *Names) upstream(u Upstream) *Upstream {
	if n == nil {
		return &u
	}
	if p, ok := n.upstreams[u]; ok {
		return p
	}
	if n.upstreams == nil {
		n.upstreams = map[Upstream]*Upstream{}
	}
	p := &u
	n.upstreams[u] = p
	return p
}

// cluster names the cluster of a Service's port,
// "<namespace>/<name>/<port>[/udp|/grpc]".
func (n *Names) cluster(ns, name string, port int32, suffix string) string {
	var buf [128]byte
	b := append(buf[:0], ns...)
	b = append(b, '/')
	b = append(b, name...)
	b = append(b, '/')
	b = strconv.AppendInt(b, int64(port), 10)
	b = append(b, suffix...)
	if n == nil {
		return string(b)
	}
	if s, ok := n.m[string(b)]; ok {
		return s
	}
	if n.m == nil {
		n.m = map[string]string{}
	}
	s := string(b)
	n.m[s] = s
	return s
}

// A ClusterSpec is what a cluster is built from: the engine keeps it with
// the rules that use it, and builds the cluster with each snapshot's
// endpoints.
type ClusterSpec struct {
	// Name is "<namespace>/<name>/<port>[/udp|/grpc]".
	Name     string
	Service  *corev1.Service
	Port     *corev1.ServicePort
	Protocol corev1.Protocol
	// GRPC says the cluster speaks HTTP/2 whatever the Service says.
	GRPC bool
	// TLS is the BackendTLSPolicy that applies to the Service port.
	TLS *backendtls.Policy
	// Rejected says the BackendTLSPolicy (or the XBackend) is unusable,
	// so there is no cluster, only its status to record.
	Rejected bool
	// XBackend, when set, is the external backend the cluster reaches,
	// in place of a Service.
	XBackend *ExternalBackend
	// Absent, with Rejected, is a Service a route names that does not
	// exist: no cluster, but the policies that target it report
	// TargetNotFound to the Gateway. A pointer keeps the many specs of
	// Services that exist small.
	Absent *types.NamespacedName
	// Upstream is how the route speaks to the Service, when it says;
	// interned, so that equal ones are one pointer.
	Upstream *Upstream
	// HostPort, for a cluster of no Service (Service nil), is the port of
	// Upstream.ExternalName, the host Envoy resolves.
	HostPort int32
	// Shares, for a cluster of no Service, makes it the endpoints of its
	// members' clusters, each a locality of its weight (interned).
	Shares *Shares
}

// Shares are the member clusters of a shared cluster, and their weights:
// Envoy's UDP proxy routes to one cluster, so a UDPRoute's weighted
// backends are one; an ExtensionService's weighted services too.
type Shares struct {
	Members []ir.WeightedCluster
}

// SharedCluster is the cluster of name made of members, which are
// clusters of their own too; members of weight 0 get nothing and are
// left out.
func SharedCluster(names *Names, name string, members []ir.WeightedCluster) ClusterSpec {
	var key strings.Builder
	var kept []ir.WeightedCluster
	for _, m := range members {
		if m.Weight > 0 {
			kept = append(kept, m)
			fmt.Fprintf(&key, "%s=%d,", m.Cluster, m.Weight)
		}
	}
	return ClusterSpec{Name: name, Shares: names.shares(key.String(), kept)}
}

func (n *Names) shares(key string, members []ir.WeightedCluster) *Shares {
	if n == nil {
		return &Shares{Members: members}
	}
	if p, ok := n.shared[key]; ok {
		return p
	}
	if n.shared == nil {
		n.shared = map[string]*Shares{}
	}
	p := &Shares{Members: members}
	n.shared[key] = p
	return p
}

// HostCluster is the cluster of a host Envoy resolves itself, at port,
// spoken to as up says (a JWKS URI's host and port): its name is
// "dns/<host>/<port>", then what sets up apart.
func HostCluster(names *Names, host string, port int32, up Upstream) ClusterSpec {
	up.ExternalName = host
	suffix := up.suffix()
	// The host is in the name already.
	suffix = strings.Replace(suffix, "/dns="+host, "", 1)
	return ClusterSpec{Name: "dns/" + host + "/" + strconv.Itoa(int(port)) + suffix, Upstream: names.upstream(up), HostPort: port}
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
