package gatewayapi

import (
	"slices"

	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"isobar.dev/controller/pkg/engine"
	"isobar.dev/controller/pkg/env"
	"isobar.dev/controller/pkg/routerule"
)

// attachHTTPRoute attaches an HTTPRoute to this Gateway's listeners,
// translates its rules into the route tables and records its status.
func (t *gatewayTranslator) attachHTTPRoute(hr *gatewayv1.HTTPRoute, rank int32) {
	r := routeOf("HTTPRoute", &hr.ObjectMeta, &hr.Spec.CommonRouteSpec, hr.Spec.Hostnames)
	t.attachRequestRoute(r, rank, func(e env.Env) *routerule.Rules { return routerule.HTTPRoute(e, &t.cache.Names, hr) })
}

// attachRequestRoute attaches an HTTPRoute or GRPCRoute, whose rules become
// HTTP routes in the virtual hosts of its hostnames, records what that
// adds up to as the route's outcome and applies it to the state. rank is
// the route's place among the routes attached with it.
func (t *gatewayTranslator) attachRequestRoute(r route, rank int32, translate func(env.Env) *routerule.Rules) {
	o := t.record(r.kind, r.meta, rank)
	if o == nil {
		return
	}
	defer t.state.Apply(o)
	atts := t.attach(o, r)
	if len(atts) == 0 {
		return
	}
	// The rules are translated whether or not a listener accepts the
	// route: ResolvedRefs reports its references either way.
	rr := t.cachedRules(o, translate)
	for _, a := range atts {
		if a.conds.IsTrue(gatewayv1.RouteConditionAccepted) {
			rr.Problems.Report(&a.conds)
		}
		t.countAccepted(o, a)
		if a.conds.IsTrue(gatewayv1.RouteConditionAccepted) {
			for i, l := range a.listeners {
				o.Added = append(o.Added, engine.Addition{Listener: slices.Index(t.listeners, l), Hosts: a.hosts[i], Routes: redirectsFor(l, rr.Routes)})
			}
		}
		setResolvedRefs(&a.conds, rr.Unresolved)
		o.Statuses = append(o.Statuses, gatewayv1.RouteParentStatus{
			ParentRef:      a.ref,
			ControllerName: t.controller,
			Conditions:     a.conds.Sorted(),
		})
	}
}

// cachedRules returns the translated rules of the route whose outcome o
// records, translating them with translate unless another Gateway did in
// this translation or this Gateway's previous state holds them and none of
// their deps changed.
func (t *gatewayTranslator) cachedRules(o *outcome, translate func(env.Env) *routerule.Rules) *routerule.Rules {
	var prev *engine.State[any]
	if t.prev != nil {
		prev = t.prev.State
	}
	hit, rules := engine.CachedRules(t.cache, prev, o.Meta, func(r *env.Reads) *routerule.Rules { return translate(t.newEnv(r)) })
	o.Rules = hit
	// Shared and clipped: an outcome never changes its clusters.
	cs := rules.Clusters
	o.Clusters = cs[:len(cs):len(cs)]
	// Shared: callers only read it.
	return rules
}
