package ingressclass

import (
	"strings"
	"testing"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

const controller = "isobar.dev/gateway-controller"

func class(name, ctrl, gateway string, isDefault bool) *networkingv1.IngressClass {
	c := &networkingv1.IngressClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: networkingv1.IngressClassSpec{Controller: ctrl}}
	if gateway != "" {
		c.Spec.Parameters = &networkingv1.IngressClassParametersReference{APIGroup: ptr.To(gatewayv1.GroupName), Kind: "Gateway", Name: gateway,
			Namespace: ptr.To("default"), Scope: ptr.To(networkingv1.IngressClassParametersReferenceScopeNamespace)}
	}
	if isDefault {
		c.Annotations = map[string]string{DefaultClass: "true"}
	}
	return c
}

// WhyNot names the first link that breaks between an object's class and
// a served Gateway, and nothing when none does.
func TestWhyNot(t *testing.T) {
	served := func(ns, name string) bool { return ns == "default" && name == "web" }
	for _, tc := range []struct {
		name, class string
		classes     []*networkingv1.IngressClass
		want        string
	}{
		{"served", "isobar", []*networkingv1.IngressClass{class("isobar", controller, "web", false)}, ""},
		{"served by default", "", []*networkingv1.IngressClass{class("isobar", controller, "web", true)}, ""},
		{"no default", "", []*networkingv1.IngressClass{class("isobar", controller, "web", false)}, "it names no ingress class, and no IngressClass is marked default"},
		{"two defaults", "", []*networkingv1.IngressClass{class("a", controller, "web", true), class("b", controller, "web", true)}, "2 IngressClasses are marked default"},
		{"missing", "nginx", nil, `IngressClass "nginx" does not exist`},
		{"the default of another controller", "", []*networkingv1.IngressClass{class("nginx", "k8s.io/ingress-nginx", "", true)}, `the default IngressClass "nginx" belongs to controller "k8s.io/ingress-nginx"`},
		{"no parameters", "isobar", []*networkingv1.IngressClass{class("isobar", controller, "", false)}, `IngressClass "isobar"'s parameters name no Gateway`},
		{"another Gateway", "isobar", []*networkingv1.IngressClass{class("isobar", controller, "gone", false)}, `hands it to Gateway default/gone, which is not served here`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := WhyNot(tc.class, tc.classes, controller, served)
			if tc.want == "" && got != "" || !strings.Contains(got, tc.want) {
				t.Errorf("WhyNot = %q, want %q", got, tc.want)
			}
		})
	}
}
