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

func TestProblemJoin(t *testing.T) {
	first := UnresolvedRef(gatewayv1.RouteReasonBackendNotFound, "Service a/x does not exist")
	second := UnresolvedRef(gatewayv1.RouteReasonRefNotPermitted, "backendRef to Service b/y is not permitted")
	for _, tc := range []struct {
		name       string
		p, q       *RouteProblem
		wantReason gatewayv1.RouteConditionReason
		want       string
	}{
		{name: "none", want: ""},
		{name: "first only", p: first, wantReason: first.Reason, want: first.Message},
		{name: "later only", q: second, wantReason: second.Reason, want: second.Message},
		{name: "the first reason stays, messages add", p: first, q: second, wantReason: first.Reason, want: first.Message + "; " + second.Message},
		{name: "a message is kept once", p: first, q: UnresolvedRef(gatewayv1.RouteReasonRefNotPermitted, first.Message), wantReason: first.Reason, want: first.Message},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.p.Join(tc.q)
			if tc.want == "" {
				if got != nil {
					t.Fatalf("Join = %+v, want nil", got)
				}
				return
			}
			if got == nil || got.Reason != tc.wantReason || got.Message != tc.want || got.Type != gatewayv1.RouteConditionResolvedRefs {
				t.Fatalf("Join = %+v, want %s %q", got, tc.wantReason, tc.want)
			}
			if tc.p != nil && tc.p.Message != first.Message {
				t.Fatalf("Join changed its receiver: %q", tc.p.Message)
			}
		})
	}
}
