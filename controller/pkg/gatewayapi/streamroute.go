package gatewayapi

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"isobar.dev/controller/pkg/backend"
	"isobar.dev/controller/pkg/engine"
	"isobar.dev/controller/pkg/ir"
	"isobar.dev/controller/pkg/listener"
	"isobar.dev/controller/pkg/resources"
)

// streamRoute is a TLSRoute, TCPRoute or UDPRoute: it forwards whole
// connections (or datagrams) to its backends.
type streamRoute struct {
	route
	backendRefs []gatewayv1.BackendRef
}

// streamRoutes collects the TLS, TCP and UDP routes, oldest first: when two
// claim the same listener and server name, the older one keeps it, so a new
// route never takes traffic from one that works.
func streamRoutes(res *resources.Resources) []*streamRoute {
	var out []*streamRoute
	for _, r := range res.TLSRoutes {
		var refs []gatewayv1.BackendRef
		for _, rule := range r.Spec.Rules {
			refs = append(refs, rule.BackendRefs...)
		}
		out = append(out, &streamRoute{routeOf("TLSRoute", &r.ObjectMeta, &r.Spec.CommonRouteSpec, r.Spec.Hostnames), refs})
	}
	for _, r := range res.TCPRoutes {
		out = append(out, &streamRoute{routeOf("TCPRoute", &r.ObjectMeta, &r.Spec.CommonRouteSpec, nil), rulesRefs(r.Spec.Rules)})
	}
	for _, r := range res.UDPRoutes {
		var refs []gatewayv1.BackendRef
		for _, rule := range r.Spec.Rules {
			refs = append(refs, rule.BackendRefs...)
		}
		out = append(out, &streamRoute{routeOf("UDPRoute", &r.ObjectMeta, &r.Spec.CommonRouteSpec, nil), refs})
	}
	// A stub's new object would also attach every stream route again.
	out = withParents(out, func(r *streamRoute) bool { return len(r.parentRefs) > 0 || r.defaulted })
	slices.SortStableFunc(out, func(a, b *streamRoute) int {
		return cmp.Or(
			a.meta.CreationTimestamp.Compare(b.meta.CreationTimestamp.Time),
			strings.Compare(a.meta.Namespace, b.meta.Namespace),
			strings.Compare(a.meta.Name, b.meta.Name),
			strings.Compare(string(a.kind), string(b.kind)),
		)
	})
	return out
}

func rulesRefs(rules []gatewayv1.TCPRouteRule) []gatewayv1.BackendRef {
	var refs []gatewayv1.BackendRef
	for _, rule := range rules {
		refs = append(refs, rule.BackendRefs...)
	}
	return refs
}

// attachStreamRoute attaches a TLS, TCP or UDP route, claims what it
// forwards on its listeners, and records its outcome. Routes are attached
// oldest first, so an older route's claims are in place.
func (t *gatewayTranslator) attachStreamRoute(r *streamRoute) {
	o := t.record(r.kind, r.meta, 0)
	if o == nil {
		return
	}
	defer t.state.Apply(o)
	atts := t.attach(o, r.route)
	if len(atts) == 0 {
		return
	}
	// References are resolved whether or not a listener accepts the
	// route: ResolvedRefs reports them either way.
	b := backend.ForStream(t.newEnv(&o.Reads), &t.cache.Names, string(r.kind), r.meta.Namespace, r.backendRefs, backend.Upstream{})
	o.Clusters = b.Clusters
	dest := t.sharedUDP(o, r, b.Destination)
	owner := r.meta.Namespace + "/" + r.meta.Name
	for _, a := range atts {
		t.countAccepted(o, a)
		if a.conds.IsTrue(gatewayv1.RouteConditionAccepted) {
			var taken []string
			for i, l := range a.listeners {
				taken = append(taken, t.addStream(l, a.hosts[i], owner, dest)...)
			}
			// A route that finds its listener (or server name) taken by
			// an older route stays accepted and counted, as v1.6's
			// conformance tests expect; the oldest keeps the traffic.
			if len(taken) > 0 {
				a.conds.Items = nil
				a.conds.Set(gatewayv1.RouteConditionAccepted, true, gatewayv1.RouteReasonAccepted,
					fmt.Sprintf("Route is accepted, but an older route already forwards %s and keeps its traffic", strings.Join(taken, ", ")))
			}
		}
		setResolvedRefs(&a.conds, b.Unresolved)
		o.Statuses = append(o.Statuses, gatewayv1.RouteParentStatus{
			ParentRef: a.ref, ControllerName: t.controller, Conditions: a.conds.Sorted(),
		})
	}
}

// sharedUDP makes the weighted backends of a UDPRoute one cluster (see
// backend.Shares), among the route's clusters.
func (t *gatewayTranslator) sharedUDP(o *outcome, r *streamRoute, d *ir.Destination) *ir.Destination {
	if r.kind != "UDPRoute" || len(d.Backends) <= 1 {
		return d
	}
	// ":" cannot be in a namespace, so the name is no Service port's.
	spec := backend.SharedCluster(&t.cache.Names, "udproute:"+r.meta.Namespace+"/"+r.meta.Name, d.Backends)
	o.Clusters = append(o.Clusters, spec)
	return &ir.Destination{Backends: []ir.WeightedCluster{{Cluster: spec.Name, Weight: 1}}}
}

// addStream claims the listener's server names (TLS) or the listener (TCP,
// UDP) for a route, and returns what an older route had already claimed.
func (t *gatewayTranslator) addStream(l *listener.Listener, hosts []string, owner string, dest *ir.Destination) []string {
	tb := t.table(l)
	if l.Family != engine.FamilyTLS {
		hosts = []string{""}
	}
	var taken []string
	for _, h := range hosts {
		if !tb.ClaimStream(h, owner, l.Certificates, dest) {
			if h == "" {
				h = fmt.Sprintf("port %d", l.Spec.Port)
			}
			taken = append(taken, h)
		}
	}
	return taken
}
