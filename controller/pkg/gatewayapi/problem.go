package gatewayapi

import (
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// A problem is why an object cannot be served as it asks, with the
// condition its status reports it under. It is an error, so that a rule
// returns it as one (wrapped with context where that helps, found again
// with errors.As), and it is how rules report a problem: the object's
// condition set records it (conditions.report). A route rule's error that
// is not a ResolvedRefs problem is a rule that cannot be served as written:
// it answers 500 and makes the route PartiallyInvalid, or not Accepted
// when no rule is valid (ruleProblems), so validation errors need no
// wrapping. T and R are the object kind's condition type
// and reason, as for conditions, so that a listener's reason on a route
// does not compile. Envoy Gateway's status errors are the model.
type problem[T, R ~string] struct {
	typ     T
	reason  R
	message string
}

func (p *problem[T, R]) Error() string { return p.message }

type (
	routeProblem    = problem[gatewayv1.RouteConditionType, gatewayv1.RouteConditionReason]
	listenerProblem = problem[gatewayv1.ListenerConditionType, gatewayv1.ListenerConditionReason]
	gatewayProblem  = problem[gatewayv1.GatewayConditionType, gatewayv1.GatewayConditionReason]
)

// unresolvedRef is a route's reference that cannot be used: ResolvedRefs
// is false with reason, and the rule's other references still work.
func unresolvedRef(reason gatewayv1.RouteConditionReason, message string) *routeProblem {
	return &routeProblem{typ: gatewayv1.RouteConditionResolvedRefs, reason: reason, message: message}
}

// unresolvedListenerRef is a listener's reference that cannot be used.
func unresolvedListenerRef(reason gatewayv1.ListenerConditionReason, message string) *listenerProblem {
	return &listenerProblem{typ: gatewayv1.ListenerConditionResolvedRefs, reason: reason, message: message}
}

// report records p as a false condition of its type: the first problem of a
// type sets its reason, later ones add their messages.
func (c *conditions[T, R]) report(p *problem[T, R]) {
	c.problem(p.typ, false, p.reason, p.message)
}
