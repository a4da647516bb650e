package target

import (
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// input is what Pick reads.
type input struct {
	GatewayClasses []*gatewayv1.GatewayClass
	Gateways       []*gatewayv1.Gateway
}

func TestPick(t *testing.T) {
	at := func(minute int) metav1.Time { return metav1.NewTime(time.Date(2026, 1, 1, 0, minute, 0, 0, time.UTC)) }
	class := func(name, controller string, created int) *gatewayv1.GatewayClass {
		return &gatewayv1.GatewayClass{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: at(created)},
			Spec: gatewayv1.GatewayClassSpec{ControllerName: gatewayv1.GatewayController(controller)}}
	}
	gateway := func(ns, name, class string, created int) *gatewayv1.Gateway {
		return &gatewayv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, CreationTimestamp: at(created)},
			Spec: gatewayv1.GatewaySpec{GatewayClassName: gatewayv1.ObjectName(class)}}
	}
	nn := func(ns, name string) types.NamespacedName { return types.NamespacedName{Namespace: ns, Name: name} }
	for _, tc := range []struct {
		name     string
		res      input
		gateway  types.NamespacedName
		class    string
		classes  []string
		gateways []types.NamespacedName
	}{
		{name: "nothing"},
		{
			name: "another controller's class only",
			res:  input{GatewayClasses: []*gatewayv1.GatewayClass{class("a", "other", 0)}, Gateways: []*gatewayv1.Gateway{gateway("ns", "g", "a", 0)}},
		},
		{
			name: "oldest class, then oldest gateway",
			res: input{
				GatewayClasses: []*gatewayv1.GatewayClass{class("young", "us", 5), class("old", "us", 1), class("theirs", "other", 0)},
				Gateways: []*gatewayv1.Gateway{
					gateway("ns", "later", "old", 3), gateway("ns", "first", "old", 2), gateway("ns", "of-young", "young", 0), gateway("ns", "theirs", "theirs", 0),
				},
			},
			gateway:  nn("ns", "first"),
			class:    "old",
			classes:  []string{"young"},
			gateways: []types.NamespacedName{nn("ns", "later"), nn("ns", "of-young")},
		},
		{
			name: "same age: first by namespace and name",
			res: input{
				GatewayClasses: []*gatewayv1.GatewayClass{class("b", "us", 1), class("a", "us", 1)},
				Gateways:       []*gatewayv1.Gateway{gateway("ns2", "g", "a", 1), gateway("ns1", "g", "a", 1)},
			},
			gateway:  nn("ns1", "g"),
			class:    "a",
			classes:  []string{"b"},
			gateways: []types.NamespacedName{nn("ns2", "g")},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Pick(tc.res.GatewayClasses, tc.res.Gateways, "us")
			if got.Gateway != tc.gateway || got.Class != tc.class {
				t.Errorf("serves %v of class %q, want %v of %q", got.Gateway, got.Class, tc.gateway, tc.class)
			}
			var classes []string
			for c, msg := range got.PassedOverClasses {
				classes = append(classes, c)
				if msg == "" {
					t.Errorf("class %s passed over without a message", c)
				}
			}
			var gateways []types.NamespacedName
			for g := range got.PassedOverGateways {
				gateways = append(gateways, g)
			}
			sortStrings := cmp.Transformer("sort", func(in []string) []string { out := append([]string(nil), in...); slices.Sort(out); return out })
			if diff := cmp.Diff(tc.classes, classes, sortStrings); diff != "" {
				t.Errorf("passed-over classes (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(len(tc.gateways), len(gateways)); diff != "" {
				t.Errorf("passed-over gateways %v, want %v", gateways, tc.gateways)
			}
			for _, g := range tc.gateways {
				if got.PassedOverGateways[g] == "" {
					t.Errorf("gateway %v not passed over with a message", g)
				}
			}
		})
	}
}
