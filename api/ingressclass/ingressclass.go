// Package ingressclass decides which Ingresses a Gateway serves: those of
// the IngressClasses whose controller is Isobar's and whose parameters
// name the Gateway (Contour's design for multiple listeners). The controller serves them; the operator
// grants the controller read access to their TLS Secrets.
package ingressclass

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"

	contourv1 "github.com/projectcontour/contour/apis/projectcontour/v1"

	networkingv1 "k8s.io/api/networking/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

const (
	// DefaultClass "true" makes an IngressClass serve Ingresses that name
	// no class.
	DefaultClass = networkingv1.AnnotationIsDefaultIngressClass
	// legacyClass is the class annotation older Ingresses use instead of
	// spec.ingressClassName.
	legacyClass = "kubernetes.io/ingress.class"
)

// Serves reports whether an IngressClass hands its Ingresses to gw: its
// controller is Isobar's and its parameters name the Gateway.
func Serves(class *networkingv1.IngressClass, gw *gatewayv1.Gateway, controller string) bool {
	p := class.Spec.Parameters
	if class.Spec.Controller != controller || p == nil || p.APIGroup == nil || *p.APIGroup != gatewayv1.GroupName || p.Kind != "Gateway" || p.Name != gw.Name {
		return false
	}
	return p.Namespace != nil && *p.Namespace == gw.Namespace && (p.Scope == nil || *p.Scope == networkingv1.IngressClassParametersReferenceScopeNamespace)
}

// Selected returns the Ingresses gw serves, oldest first: those whose
// class (spec.ingressClassName, else the legacy annotation, else the class
// marked default) serves gw.
func Selected(gw *gatewayv1.Gateway, controller string, classes []*networkingv1.IngressClass, ingresses []*networkingv1.Ingress) []*networkingv1.Ingress {
	out := Select(gw, controller, classes, ingresses, IngressClassOf)
	slices.SortFunc(out, func(a, b *networkingv1.Ingress) int {
		return cmp.Or(a.CreationTimestamp.Compare(b.CreationTimestamp.Time), strings.Compare(a.Namespace, b.Namespace), strings.Compare(a.Name, b.Name))
	})
	return out
}

// IngressClassOf is the ingress class an Ingress names
// (spec.ingressClassName, else the legacy annotation), "" for none.
func IngressClassOf(ing *networkingv1.Ingress) string {
	if ing.Spec.IngressClassName != nil {
		return *ing.Spec.IngressClassName
	}
	return ing.Annotations[legacyClass]
}

// Contour's annotations naming an HTTPProxy's ingress class, read when
// spec.ingressClassName is empty.
const (
	proxyClass = "projectcontour.io/ingress.class"
)

// SelectedProxies returns the HTTPProxies gw serves, in the order given:
// those whose class (spec.ingressClassName, else Contour's class annotations,
// else the class marked default) serves gw.
func SelectedProxies(gw *gatewayv1.Gateway, controller string, classes []*networkingv1.IngressClass, proxies []*contourv1.HTTPProxy) []*contourv1.HTTPProxy {
	return Select(gw, controller, classes, proxies, ProxyClass)
}

// ProxyClass is the ingress class an HTTPProxy names, "" for none.
func ProxyClass(p *contourv1.HTTPProxy) string {
	return cmp.Or(p.Spec.IngressClassName, p.Annotations[proxyClass], p.Annotations[legacyClass])
}

// Select returns the objects of an ingress-class-selected kind (Ingress,
// Contour's HTTPProxy) that gw serves, in the order given: those whose
// class
// (named by className, "" for none, else the class marked default) serves
// gw.
func Select[T any](gw *gatewayv1.Gateway, controller string, classes []*networkingv1.IngressClass, objs []T, className func(T) string) []T {
	ours := map[string]bool{}
	var defaults []*networkingv1.IngressClass
	for _, c := range classes {
		if c.Annotations[DefaultClass] == "true" {
			defaults = append(defaults, c)
		}
		if Serves(c, gw, controller) {
			ours[c.Name] = true
		}
	}
	// Kubernetes gives a classless Ingress the default class only when
	// exactly one class is marked default.
	defaultClass := ""
	if len(defaults) == 1 {
		defaultClass = defaults[0].Name
	}
	var out []T
	for _, o := range objs {
		if ours[cmp.Or(className(o), defaultClass)] {
			out = append(out, o)
		}
	}
	return out
}

// WhyNot says why an object of an ingress-class-selected kind that names
// class ("" for none) is served by no Gateway that translated reports on
// (by "namespace/name"); "" when one is. It is what a user needs to hear
// about an Ingress or HTTPProxy that nothing answers for.
func WhyNot(class string, classes []*networkingv1.IngressClass, controller string, translated func(namespace, name string) bool) string {
	named := "IngressClass " + strconv.Quote(class)
	if class == "" {
		var defaults []*networkingv1.IngressClass
		for _, c := range classes {
			if c.Annotations[DefaultClass] == "true" {
				defaults = append(defaults, c)
			}
		}
		switch len(defaults) {
		case 0:
			return "it names no ingress class, and no IngressClass is marked default (" + DefaultClass + `: "true")`
		case 1:
			class, named = defaults[0].Name, "the default IngressClass "+strconv.Quote(defaults[0].Name)
		default:
			return fmt.Sprintf("it names no ingress class, and %d IngressClasses are marked default, so Kubernetes gives it none", len(defaults))
		}
	}
	i := slices.IndexFunc(classes, func(c *networkingv1.IngressClass) bool { return c.Name == class })
	if i < 0 {
		return named + " does not exist"
	}
	c := classes[i]
	if c.Spec.Controller != controller {
		return fmt.Sprintf("%s belongs to controller %q, not %q", named, c.Spec.Controller, controller)
	}
	p := c.Spec.Parameters
	if p == nil || p.APIGroup == nil || *p.APIGroup != gatewayv1.GroupName || p.Kind != "Gateway" || p.Namespace == nil ||
		p.Scope != nil && *p.Scope != networkingv1.IngressClassParametersReferenceScopeNamespace {
		return named + "'s parameters name no Gateway (they need apiGroup " + gatewayv1.GroupName + ", kind Gateway, scope Namespace, a namespace and a name)"
	}
	if !translated(*p.Namespace, p.Name) {
		return fmt.Sprintf("%s hands it to Gateway %s/%s, which is not served here (not in the input, or of another controller's GatewayClass)", named, *p.Namespace, p.Name)
	}
	return ""
}
