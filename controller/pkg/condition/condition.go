// Package condition is how translation reports on an object: a List of its
// status conditions, and the Problem type every rule returns when it
// cannot serve an object as written.
//
// Both are generic in the object kind's condition type T and reason R, so
// that a listener's reason on a route does not compile: the Gateway API's
// constants are typed by kind. A reason the Gateway API does not name, such
// as "HostnameConflict", is a string constant at its one use.
package condition

import (
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// A List accumulates the conditions of one object. The first condition set
// of a type stays: translation records problems as it finds them and fills
// in the healthy defaults last, so the first problem found is the one
// reported.
type List[T, R ~string] struct {
	// Generation is the object's, written into every condition.
	Generation int64
	// Items are the conditions in the order set.
	Items []metav1.Condition
}

// The condition lists of the kinds translation reports on. Listeners of a
// ListenerSet take the Gateway listener's types: the names are the same.
type (
	Route       = List[gatewayv1.RouteConditionType, gatewayv1.RouteConditionReason]
	Listener    = List[gatewayv1.ListenerConditionType, gatewayv1.ListenerConditionReason]
	Gateway     = List[gatewayv1.GatewayConditionType, gatewayv1.GatewayConditionReason]
	ListenerSet = List[gatewayv1.ListenerSetConditionType, gatewayv1.ListenerSetConditionReason]
	Policy      = List[gatewayv1.PolicyConditionType, gatewayv1.PolicyConditionReason]
)

// Set sets a condition unless one of its type is set already.
func (c *List[T, R]) Set(typ T, status bool, reason R, message string) {
	if c.Get(typ) != nil {
		return
	}
	c.Add(typ, status, reason, message)
}

// Problem records a problem under a condition type. Problems of a type
// after the first keep its status and reason and add their messages, so a
// person sees every problem at once.
func (c *List[T, R]) Problem(typ T, status bool, reason R, message string) {
	cond := c.Get(typ)
	if cond == nil {
		c.Add(typ, status, reason, message)
		return
	}
	if !strings.Contains(cond.Message, message) {
		cond.Message += "; " + message
	}
}

// Report records p as a false condition of its type: the first problem of
// a type sets its reason, later ones add their messages.
func (c *List[T, R]) Report(p *Problem[T, R]) {
	c.Problem(p.Type, false, p.Reason, p.Message)
}

// Add appends a condition, whether or not one of its type is set.
func (c *List[T, R]) Add(typ T, status bool, reason R, message string) {
	s := metav1.ConditionFalse
	if status {
		s = metav1.ConditionTrue
	}
	if c.Items == nil {
		// Most objects get two or three conditions.
		c.Items = make([]metav1.Condition, 0, 3)
	}
	c.Items = append(c.Items, metav1.Condition{Type: string(typ), Status: s, Reason: string(reason), Message: message, ObservedGeneration: c.Generation})
}

// Get returns the condition of a type, or nil.
func (c *List[T, R]) Get(typ T) *metav1.Condition {
	for i := range c.Items {
		if c.Items[i].Type == string(typ) {
			return &c.Items[i]
		}
	}
	return nil
}

// IsTrue reports whether the condition of a type is set and true.
func (c *List[T, R]) IsTrue(typ T) bool {
	cond := c.Get(typ)
	return cond != nil && cond.Status == metav1.ConditionTrue
}

// Sorted returns a copy of the conditions ordered by type, for stable
// output.
func (c *List[T, R]) Sorted() []metav1.Condition {
	out := slices.Clone(c.Items)
	slices.SortFunc(out, func(a, b metav1.Condition) int { return strings.Compare(a.Type, b.Type) })
	return out
}

// JoinMessages joins distinct messages into one list.
func JoinMessages(msgs []string) string {
	var out []string
	for _, m := range msgs {
		if !slices.Contains(out, m) {
			out = append(out, m)
		}
	}
	return strings.Join(out, "; ")
}
