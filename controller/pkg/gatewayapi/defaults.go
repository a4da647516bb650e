package gatewayapi

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// ConditionDefaultGateway is the Gateway condition GEP-3793 asks of a
// default Gateway; the API has no constant for it yet.
const ConditionDefaultGateway gatewayv1.GatewayConditionType = "DefaultGateway"

// routeOf is what attachment needs of a route of any kind. A route that
// asks for the default Gateways (useDefaultGateways: All) is defaulted.
func routeOf(kind gatewayv1.Kind, meta *metav1.ObjectMeta, spec *gatewayv1.CommonRouteSpec, hostnames []gatewayv1.Hostname) route {
	return route{kind: kind, meta: meta, parentRefs: spec.ParentRefs, hostnames: hostnames,
		defaulted: spec.UseDefaultGateways == gatewayv1.GatewayDefaultScopeAll}
}

// isDefault reports whether this Gateway is a default Gateway: one that
// takes the defaulted routes, as if they named it (GEP-3793).
func (t *gatewayTranslator) isDefault() bool {
	return t.gw.Spec.DefaultScope == gatewayv1.GatewayDefaultScopeAll
}

// refsOf are the parentRefs a route attaches to this Gateway through: its
// own, and, when it is defaulted and this Gateway is a default that none of
// them names, one naming this Gateway, which its status reports under.
// Listeners' allowedRoutes apply to it as to any other.
func (t *gatewayTranslator) refsOf(r route) []gatewayv1.ParentReference {
	if !r.defaulted || !t.isDefault() {
		return r.parentRefs
	}
	for _, ref := range r.parentRefs {
		if set, ok := t.parentOf(ref, r.meta.Namespace); ok && set == nil {
			return r.parentRefs
		}
	}
	group, kind, ns := gatewayv1.Group(gatewayv1.GroupName), gatewayv1.Kind("Gateway"), gatewayv1.Namespace(t.gw.Namespace)
	refs := make([]gatewayv1.ParentReference, len(r.parentRefs), len(r.parentRefs)+1)
	copy(refs, r.parentRefs)
	return append(refs, gatewayv1.ParentReference{Group: &group, Kind: &kind, Namespace: &ns, Name: gatewayv1.ObjectName(t.gw.Name)})
}

// setDefaultCondition says whether the Gateway is a default Gateway; a
// Gateway that is not has no such condition.
func (t *gatewayTranslator) setDefaultCondition(c *gatewayConditions) {
	if t.isDefault() {
		c.Set(ConditionDefaultGateway, true, "DefaultScope", "Gateway has default scope All: routes with useDefaultGateways: All attach to it")
	}
}

// mayAttach reports whether a route may attach to some Gateway: it names
// parents, or asks for the default Gateways.
func mayAttach(spec *gatewayv1.CommonRouteSpec) bool {
	return len(spec.ParentRefs) > 0 || spec.UseDefaultGateways == gatewayv1.GatewayDefaultScopeAll
}
