package condition

import (
	"strings"

	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// A Problem is why an object cannot be served as it asks, with the
// condition its status reports it under. It is an error, so that a rule
// returns it as one (wrapped with context where that helps, found again
// with errors.As), and it is the one way rules report a problem: the
// object's List records it (List.Report). A route rule's error that is not
// a ResolvedRefs problem is a rule that cannot be served as written: it
// answers 500 and makes the route PartiallyInvalid, or not Accepted when
// no rule is valid, so validation errors need no wrapping. Envoy Gateway's
// status errors are the model.
type Problem[T, R ~string] struct {
	Type    T
	Reason  R
	Message string
}

func (p *Problem[T, R]) Error() string { return p.Message }

// Join is p with q's message added, as List.Problem adds a later problem
// of a type: the first problem's reason stays, and a message is kept once.
// Either may be nil.
func (p *Problem[T, R]) Join(q *Problem[T, R]) *Problem[T, R] {
	switch {
	case p == nil:
		return q
	case q == nil || strings.Contains(p.Message, q.Message):
		return p
	}
	return &Problem[T, R]{Type: p.Type, Reason: p.Reason, Message: p.Message + "; " + q.Message}
}

// The problems of the kinds translation reports on.
type (
	RouteProblem    = Problem[gatewayv1.RouteConditionType, gatewayv1.RouteConditionReason]
	ListenerProblem = Problem[gatewayv1.ListenerConditionType, gatewayv1.ListenerConditionReason]
	GatewayProblem  = Problem[gatewayv1.GatewayConditionType, gatewayv1.GatewayConditionReason]
)

// UnresolvedRef is a route's reference that cannot be used: ResolvedRefs
// is false with reason, and the rule's other references still work.
func UnresolvedRef(reason gatewayv1.RouteConditionReason, message string) *RouteProblem {
	return &RouteProblem{Type: gatewayv1.RouteConditionResolvedRefs, Reason: reason, Message: message}
}

// UnresolvedListenerRef is a listener's reference that cannot be used.
func UnresolvedListenerRef(reason gatewayv1.ListenerConditionReason, message string) *ListenerProblem {
	return &ListenerProblem{Type: gatewayv1.ListenerConditionResolvedRefs, Reason: reason, Message: message}
}
