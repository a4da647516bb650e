package unserved

import (
	"slices"
	"strings"
	"testing"

	contourv1 "github.com/projectcontour/contour/apis/projectcontour/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"isobar.dev/controller/pkg/resources"
)

const ours = "isobar.dev/gateway-controller"

// An Ingress or HTTPProxy is unserved when its class is missing, another
// controller's, or hands it to a Gateway that is not ours or not there;
// one whose class hands it to a Gateway of ours is served, whichever
// fleet serves that Gateway.
func TestByClass(t *testing.T) {
	class := func(name, controller, gateway string) *networkingv1.IngressClass {
		return &networkingv1.IngressClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: networkingv1.IngressClassSpec{Controller: controller,
			Parameters: &networkingv1.IngressClassParametersReference{APIGroup: ptr.To(gatewayv1.GroupName), Kind: "Gateway",
				Scope: ptr.To(networkingv1.IngressClassParametersReferenceScopeNamespace), Namespace: ptr.To("infra"), Name: gateway}}}
	}
	gateway := func(name, class string) *gatewayv1.Gateway {
		return &gatewayv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: "infra", Name: name}, Spec: gatewayv1.GatewaySpec{GatewayClassName: gatewayv1.ObjectName(class)}}
	}
	ingress := func(name, class string) *networkingv1.Ingress {
		return &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: name}, Spec: networkingv1.IngressSpec{IngressClassName: ptr.To(class)}}
	}
	res := &resources.Resources{
		GatewayClasses: []*gatewayv1.GatewayClass{
			{ObjectMeta: metav1.ObjectMeta{Name: "isobar"}, Spec: gatewayv1.GatewayClassSpec{ControllerName: ours}},
			{ObjectMeta: metav1.ObjectMeta{Name: "theirs"}, Spec: gatewayv1.GatewayClassSpec{ControllerName: "example.com/other"}},
		},
		Gateways:       []*gatewayv1.Gateway{gateway("edge", "isobar"), gateway("foreign", "theirs")},
		IngressClasses: []*networkingv1.IngressClass{class("edge", ours, "edge"), class("foreign", ours, "foreign"), class("gone", ours, "gone"), class("nginx", "k8s.io/ingress-nginx", "edge")},
		Ingresses:      []*networkingv1.Ingress{ingress("served", "edge"), ingress("foreign", "foreign"), ingress("gone", "gone"), ingress("nginx", "nginx"), ingress("missing", "missing")},
		HTTPProxies:    []*contourv1.HTTPProxy{{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "no-class"}}, {ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "served"}, Spec: contourv1.HTTPProxySpec{IngressClassName: "edge"}}},
	}
	var got []string
	for _, n := range ByClass(res, ours, OursServed(res, ours)) {
		got = append(got, n.Kind+" "+n.Name+": "+n.Why)
	}
	want := []string{
		"Ingress foreign: is not served here", "Ingress gone: is not served here", "Ingress nginx: belongs to controller",
		"Ingress missing: does not exist", "HTTPProxy no-class: no IngressClass is marked default",
	}
	if len(got) != len(want) || slices.ContainsFunc(want, func(w string) bool {
		name, why, _ := strings.Cut(w, ": ")
		return !slices.ContainsFunc(got, func(g string) bool { return strings.HasPrefix(g, name+": ") && strings.Contains(g, why) })
	}) {
		t.Errorf("unserved:\n%s\nwant, by name and a part of the reason:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// A route no Gateway can serve names no parent, or only Gateways that do
// not exist; one that names a Gateway that exists (whoever serves it), a
// parent of another kind, or the default Gateways is not judged here.
func TestByParents(t *testing.T) {
	exists := Exists(&resources.Resources{Gateways: []*gatewayv1.Gateway{{ObjectMeta: metav1.ObjectMeta{Namespace: "infra", Name: "edge"}}}})
	kind := func(k string) *gatewayv1.Kind { v := gatewayv1.Kind(k); return &v }
	ns := func(n string) *gatewayv1.Namespace { v := gatewayv1.Namespace(n); return &v }
	for _, tc := range []struct {
		name      string
		refs      []gatewayv1.ParentReference
		defaulted bool
		why       string // "" for no note
	}{
		{"no parentRefs", nil, false, "no parentRefs"},
		{"the default Gateways", nil, true, ""},
		{"a Gateway that exists", []gatewayv1.ParentReference{{Name: "edge", Namespace: ns("infra")}}, false, ""},
		{"a typo", []gatewayv1.ParentReference{{Name: "egde", Namespace: ns("infra")}}, false, "do not exist: infra/egde"},
		{"the route's namespace by default", []gatewayv1.ParentReference{{Name: "edge"}}, false, "do not exist: app/edge"},
		{"one of two exists", []gatewayv1.ParentReference{{Name: "egde", Namespace: ns("infra")}, {Name: "edge", Namespace: ns("infra")}}, false, ""},
		{"a ListenerSet", []gatewayv1.ParentReference{{Name: "set", Kind: kind("ListenerSet")}}, false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n, ok := ByParents("HTTPRoute", "app", "r", ParentsOf("app", tc.refs, tc.defaulted), exists)
			if ok != (tc.why != "") || ok && !strings.Contains(n.Why, tc.why) {
				t.Errorf("note %v (%v), want one saying %q", n, ok, tc.why)
			}
		})
	}
}

func TestWithoutClass(t *testing.T) {
	res := &resources.Resources{
		GatewayClasses: []*gatewayv1.GatewayClass{{ObjectMeta: metav1.ObjectMeta{Name: "isobar"}}},
		Gateways: []*gatewayv1.Gateway{
			{ObjectMeta: metav1.ObjectMeta{Namespace: "infra", Name: "edge"}, Spec: gatewayv1.GatewaySpec{GatewayClassName: "isobar"}},
			{ObjectMeta: metav1.ObjectMeta{Namespace: "infra", Name: "lost"}, Spec: gatewayv1.GatewaySpec{GatewayClassName: "isobr"}},
		},
	}
	got := WithoutClass(res)
	if len(got) != 1 || got[0].Name != "lost" || !strings.Contains(got[0].Why, `"isobr" does not exist`) {
		t.Errorf("WithoutClass = %v, want the Gateway lost, its class isobr missing", got)
	}
}
