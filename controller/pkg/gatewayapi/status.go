package gatewayapi

import (
	"maps"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
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
	// ListenerSets holds the status of each ListenerSet whose parentRef
	// names a translated Gateway.
	ListenerSets map[types.NamespacedName]*ListenerSetStatus
	// Ingresses holds what to report on each Ingress a translated Gateway
	// serves.
	Ingresses map[types.NamespacedName]*IngressStatus
}

// RouteKey names a route of any kind.
type RouteKey struct {
	Kind      string // HTTPRoute, TLSRoute, TCPRoute, UDPRoute
	Namespace string
	Name      string
}

func newStatus() *Status {
	return &Status{
		GatewayClasses:     map[string]*gatewayv1.GatewayClassStatus{},
		Gateways:           map[types.NamespacedName]*gatewayv1.GatewayStatus{},
		Routes:             map[RouteKey][]gatewayv1.RouteParentStatus{},
		BackendTLSPolicies: map[types.NamespacedName][]gatewayv1.PolicyAncestorStatus{},
		ListenerSets:       map[types.NamespacedName]*ListenerSetStatus{},
		Ingresses:          map[types.NamespacedName]*IngressStatus{},
	}
}

func routeKey(kind string, meta *metav1.ObjectMeta) RouteKey {
	return RouteKey{Kind: kind, Namespace: meta.Namespace, Name: meta.Name}
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

// conditions accumulates the conditions of one object. The first condition
// set of a type stays: translation records problems as it finds them and
// fills in the healthy defaults last, so the first problem found is the one
// reported. T and R are the object kind's condition type and reason types,
// so that a condition or reason of another kind does not compile (the
// Gateway API's constants are typed by kind); a reason the Gateway API does
// not name, such as "HostnameConflict", is a string constant at its one use.
type conditions[T, R ~string] struct {
	generation int64
	list       []metav1.Condition
}

// The condition sets of the kinds the translator reports on. Listeners of
// a ListenerSet take the Gateway listener's types: the names are the same.
type (
	routeConditions       = conditions[gatewayv1.RouteConditionType, gatewayv1.RouteConditionReason]
	listenerConditions    = conditions[gatewayv1.ListenerConditionType, gatewayv1.ListenerConditionReason]
	gatewayConditions     = conditions[gatewayv1.GatewayConditionType, gatewayv1.GatewayConditionReason]
	listenerSetConditions = conditions[gatewayv1.ListenerSetConditionType, gatewayv1.ListenerSetConditionReason]
	policyConditions      = conditions[gatewayv1.PolicyConditionType, gatewayv1.PolicyConditionReason]
)

func (c *conditions[T, R]) set(typ T, status bool, reason R, message string) {
	if c.get(typ) != nil {
		return
	}
	c.add(typ, status, reason, message)
}

// problem records a problem under a condition type. Problems of a type
// after the first keep its status and reason and add their messages, so a
// person sees every problem at once.
func (c *conditions[T, R]) problem(typ T, status bool, reason R, message string) {
	cond := c.get(typ)
	if cond == nil {
		c.add(typ, status, reason, message)
		return
	}
	if !strings.Contains(cond.Message, message) {
		cond.Message += "; " + message
	}
}

func (c *conditions[T, R]) add(typ T, status bool, reason R, message string) {
	s := metav1.ConditionFalse
	if status {
		s = metav1.ConditionTrue
	}
	if c.list == nil {
		// Most objects get two or three conditions.
		c.list = make([]metav1.Condition, 0, 3)
	}
	c.list = append(c.list, metav1.Condition{Type: string(typ), Status: s, Reason: string(reason), Message: message, ObservedGeneration: c.generation})
}

func (c *conditions[T, R]) get(typ T) *metav1.Condition {
	for i := range c.list {
		if c.list[i].Type == string(typ) {
			return &c.list[i]
		}
	}
	return nil
}

func (c *conditions[T, R]) isTrue(typ T) bool {
	cond := c.get(typ)
	return cond != nil && cond.Status == metav1.ConditionTrue
}

// sorted returns the conditions ordered by type, for stable output.
func (c *conditions[T, R]) sorted() []metav1.Condition {
	out := slices.Clone(c.list)
	slices.SortFunc(out, func(a, b metav1.Condition) int { return strings.Compare(a.Type, b.Type) })
	return out
}

// setResolvedRefs sets a route parent's ResolvedRefs condition: the first
// problem the route's translation found (in resolved), else all resolved.
func setResolvedRefs(conds, resolved *routeConditions) {
	typ := gatewayv1.RouteConditionResolvedRefs
	if c := resolved.get(typ); c != nil {
		conds.set(typ, c.Status == metav1.ConditionTrue, gatewayv1.RouteConditionReason(c.Reason), c.Message)
		return
	}
	conds.set(typ, true, gatewayv1.RouteReasonResolvedRefs, "All references are resolved")
}

// joinMessages joins distinct messages into one sentence list.
func joinMessages(msgs []string) string {
	var out []string
	for _, m := range msgs {
		if !slices.Contains(out, m) {
			out = append(out, m)
		}
	}
	return strings.Join(out, "; ")
}
