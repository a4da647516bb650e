package serve

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

func TestRouteStubs(t *testing.T) {
	gw := types.NamespacedName{Namespace: "edge", Name: "web"}
	kind := func(k string) *gatewayv1.Kind { v := gatewayv1.Kind(k); return &v }
	group := func(g string) *gatewayv1.Group { v := gatewayv1.Group(g); return &v }
	ns := func(n string) *gatewayv1.Namespace { v := gatewayv1.Namespace(n); return &v }
	for _, tc := range []struct {
		name    string
		routeNS string
		ref     gatewayv1.ParentReference
		whole   bool
		// parents are the Gateways a stub's parents annotation keeps,
		// notOnlyGateways for a parent that is not a Gateway.
		parents string
	}{
		{"the Gateway, namespace defaulted", "edge", gatewayv1.ParentReference{Name: "web"}, true, ""},
		{"the Gateway, from another namespace", "apps", gatewayv1.ParentReference{Name: "web", Namespace: ns("edge")}, true, ""},
		{"the Gateway, group and kind spelled out", "edge", gatewayv1.ParentReference{Name: "web", Group: group(gatewayv1.GroupName), Kind: kind("Gateway")}, true, ""},
		{"a ListenerSet", "apps", gatewayv1.ParentReference{Name: "set", Kind: kind("ListenerSet")}, true, ""},
		{"a Gateway of the same name elsewhere", "apps", gatewayv1.ParentReference{Name: "web"}, false, "apps/web"},
		{"another Gateway", "edge", gatewayv1.ParentReference{Name: "other"}, false, "edge/other"},
		{"a Service (mesh)", "edge", gatewayv1.ParentReference{Name: "web", Group: group(""), Kind: kind("Service")}, false, "-"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			route := &gatewayv1.HTTPRoute{
				ObjectMeta: metav1.ObjectMeta{Namespace: tc.routeNS, Name: "r", UID: "u1", ResourceVersion: "7", Generation: 3,
					Labels: map[string]string{"team": "a"}, Annotations: map[string]string{"note": "x"}, ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}},
				Spec: gatewayv1.HTTPRouteSpec{
					CommonRouteSpec: gatewayv1.CommonRouteSpec{ParentRefs: []gatewayv1.ParentReference{tc.ref}},
					Hostnames:       []gatewayv1.Hostname{"a.example.com"},
					Rules:           []gatewayv1.HTTPRouteRule{{}},
				},
				Status: gatewayv1.HTTPRouteStatus{RouteStatus: gatewayv1.RouteStatus{Parents: []gatewayv1.RouteParentStatus{{ControllerName: "us"}}}},
			}
			out, err := routeStubs(gw)(route)
			if err != nil {
				t.Fatal(err)
			}
			got := out.(*gatewayv1.HTTPRoute)
			if whole := len(got.Spec.Rules) == 1 && len(got.Spec.Hostnames) == 1; whole != tc.whole {
				t.Errorf("kept whole: %v, want %v", whole, tc.whole)
			}
			if got.ManagedFields != nil {
				t.Error("managed fields kept")
			}
			if got.Name != "r" || got.Namespace != tc.routeNS || got.UID != "u1" || got.ResourceVersion != "7" || got.Generation != 3 {
				t.Errorf("identity lost: %+v", got.ObjectMeta)
			}
			if tc.whole {
				if len(got.Spec.ParentRefs) != 1 || len(got.Status.Parents) != 1 || len(got.Labels) != 1 {
					t.Errorf("a whole route lost parentRefs %v, status %v or labels %v", got.Spec.ParentRefs, got.Status.Parents, got.Labels)
				}
				return
			}
			// A stub has no parentRefs: the status writer reads it from
			// the API server. It keeps the names of the Gateways its
			// route named, for the report of what no Gateway serves.
			if len(got.Spec.ParentRefs) != 0 || len(got.Status.Parents) != 0 || got.Labels != nil || got.Annotations["note"] != "" {
				t.Errorf("a stub kept parentRefs %v, status %v, labels %v or annotations %v", got.Spec.ParentRefs, got.Status.Parents, got.Labels, got.Annotations)
			}
			if parents := got.Annotations[stubParents]; parents != tc.parents {
				t.Errorf("the stub's parents %q, want %q", parents, tc.parents)
			}
			// The informer may transform a stub again: it stays as it is.
			again, err := routeStubs(gw)(got)
			if err != nil {
				t.Fatal(err)
			}
			if p, ok := routeParents(again.(*gatewayv1.HTTPRoute)); ok != (tc.parents != notOnlyGateways) || ok && len(p.Gateways) != 1 {
				t.Errorf("transformed twice, the stub's parents are %+v (known: %v)", p, ok)
			}
		})
	}
}
