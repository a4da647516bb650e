package gatewayapi

import (
	"maps"

	contourv1alpha1 "github.com/projectcontour/contour/apis/projectcontour/v1alpha1"
	"k8s.io/apimachinery/pkg/types"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"isobar.dev/controller/pkg/condition"
	"isobar.dev/controller/pkg/engine"
)

// Status is what the controller writes: the Gateways' status, and for each
// route the status.parents entries that are Isobar's. Conditions carry no
// lastTransitionTime; the status writer sets it when a condition changes.
type Status struct {
	// GatewayClasses are the classes with Isobar's controllerName. Offline
	// their parametersRef is not checked; the operator checks it.
	GatewayClasses map[string]*gatewayv1.GatewayClassStatus
	Gateways       map[types.NamespacedName]*gatewayv1.GatewayStatus
	Routes         map[RouteKey][]gatewayv1.RouteParentStatus
	// BackendTLSPolicies holds, per policy, an ancestor entry for each
	// Gateway whose routes use it.
	BackendTLSPolicies map[types.NamespacedName][]gatewayv1.PolicyAncestorStatus
	// BackendTrafficPolicies holds, per XBackendTrafficPolicy, an
	// ancestor entry for each Gateway whose routes use its Service.
	BackendTrafficPolicies map[types.NamespacedName][]gatewayv1.PolicyAncestorStatus
	// Backends holds, per XBackend, an ancestor entry for each Gateway
	// whose routes use it (an XBackend's status has the entries of a
	// policy's, under another type).
	Backends map[types.NamespacedName][]gatewayv1.PolicyAncestorStatus
	// ListenerSets holds the status of each ListenerSet whose parentRef
	// names a translated Gateway.
	ListenerSets map[types.NamespacedName]*ListenerSetStatus
	// ExtensionServices holds the status of each ExtensionService a
	// Gateway's profile or a processor's object uses; it depends on
	// nothing but the ExtensionService and its Service, so every Gateway
	// writes the same.
	ExtensionServices map[types.NamespacedName]contourv1alpha1.ExtensionServiceStatus
}

// RouteKey names a route of any kind.
type RouteKey = engine.RouteKey

func newStatus() *Status {
	return &Status{
		GatewayClasses:         map[string]*gatewayv1.GatewayClassStatus{},
		Gateways:               map[types.NamespacedName]*gatewayv1.GatewayStatus{},
		Routes:                 map[RouteKey][]gatewayv1.RouteParentStatus{},
		BackendTLSPolicies:     map[types.NamespacedName][]gatewayv1.PolicyAncestorStatus{},
		BackendTrafficPolicies: map[types.NamespacedName][]gatewayv1.PolicyAncestorStatus{},
		Backends:               map[types.NamespacedName][]gatewayv1.PolicyAncestorStatus{},
		ListenerSets:           map[types.NamespacedName]*ListenerSetStatus{},
		ExtensionServices:      map[types.NamespacedName]contourv1alpha1.ExtensionServiceStatus{},
	}
}

// addGatewayRoutes adds the route parent statuses of one Gateway's state.
// The first Gateway's are a copy of the map (the state changes with the
// next translation; the statuses, clipped, are shared), which costs far
// less than adding them one by one.
func (s *Status) addGatewayRoutes(routes map[RouteKey][]gatewayv1.RouteParentStatus) {
	if len(s.Routes) == 0 {
		if len(routes) > 0 {
			s.Routes = maps.Clone(routes)
		}
		return
	}
	for k, ps := range routes {
		s.Routes[k] = append(s.Routes[k], ps...)
	}
}

// The condition lists and problems of the kinds the translator reports on.
type (
	routeConditions       = condition.Route
	gatewayConditions     = condition.Gateway
	listenerSetConditions = condition.ListenerSet
	gatewayProblem        = condition.GatewayProblem
)

// setResolvedRefs sets a route parent's ResolvedRefs condition: the
// problem the route's translation found with its references, if any, else
// all resolved.
func setResolvedRefs(conds *routeConditions, unresolved *condition.RouteProblem) {
	typ := gatewayv1.RouteConditionResolvedRefs
	if unresolved != nil {
		conds.Set(typ, false, unresolved.Reason, unresolved.Message)
		return
	}
	conds.Set(typ, true, gatewayv1.RouteReasonResolvedRefs, "All references are resolved")
}
