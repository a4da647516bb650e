package condition

import (
	"errors"
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

func TestList(t *testing.T) {
	const (
		accepted = gatewayv1.RouteConditionAccepted
		resolved = gatewayv1.RouteConditionResolvedRefs
	)
	for _, tc := range []struct {
		name string
		do   func(*Route)
		want []metav1.Condition
	}{{
		name: "the first condition of a type stays",
		do: func(c *Route) {
			c.Set(accepted, false, gatewayv1.RouteReasonNotAllowedByListeners, "no")
			c.Set(accepted, true, gatewayv1.RouteReasonAccepted, "yes")
		},
		want: []metav1.Condition{{Type: "Accepted", Status: "False", Reason: "NotAllowedByListeners", Message: "no", ObservedGeneration: 3}},
	}, {
		name: "problems of a type add their messages once",
		do: func(c *Route) {
			c.Report(UnresolvedRef(gatewayv1.RouteReasonBackendNotFound, "a is missing"))
			c.Report(UnresolvedRef(gatewayv1.RouteReasonRefNotPermitted, "b is not permitted"))
			c.Report(UnresolvedRef(gatewayv1.RouteReasonBackendNotFound, "a is missing"))
			c.Set(resolved, true, gatewayv1.RouteReasonResolvedRefs, "All references are resolved")
		},
		want: []metav1.Condition{{Type: "ResolvedRefs", Status: "False", Reason: "BackendNotFound", Message: "a is missing; b is not permitted", ObservedGeneration: 3}},
	}, {
		name: "sorted by type",
		do: func(c *Route) {
			c.Set(resolved, true, gatewayv1.RouteReasonResolvedRefs, "r")
			c.Set(accepted, true, gatewayv1.RouteReasonAccepted, "a")
		},
		want: []metav1.Condition{
			{Type: "Accepted", Status: "True", Reason: "Accepted", Message: "a", ObservedGeneration: 3},
			{Type: "ResolvedRefs", Status: "True", Reason: "ResolvedRefs", Message: "r", ObservedGeneration: 3},
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			c := Route{Generation: 3}
			tc.do(&c)
			got := c.Sorted()
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("got %v\nwant %v", got, tc.want)
			}
		})
	}
}

func TestProblemIsAnError(t *testing.T) {
	err := fmt.Errorf("rule 2: %w", UnresolvedRef(gatewayv1.RouteReasonInvalidKind, "kind Foo is not supported"))
	var p *RouteProblem
	if !errors.As(err, &p) || p.Type != gatewayv1.RouteConditionResolvedRefs || p.Reason != gatewayv1.RouteReasonInvalidKind {
		t.Fatalf("errors.As(%v) = %v, want the ResolvedRefs problem", err, p)
	}
	if got, want := err.Error(), "rule 2: kind Foo is not supported"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
}
