// Package ingressclass decides which Ingresses a Gateway serves: those of
// the IngressClasses whose controller is Isobar's and whose parameters
// name the Gateway (Contour's design for multiple listeners). The controller serves them; the operator
// grants the controller read access to their TLS Secrets.
package ingressclass

import (
	"slices"
	"strings"

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
	var out []*networkingv1.Ingress
	for _, ing := range ingresses {
		class := ""
		switch {
		case ing.Spec.IngressClassName != nil:
			class = *ing.Spec.IngressClassName
		case ing.Annotations[legacyClass] != "":
			class = ing.Annotations[legacyClass]
		default:
			class = defaultClass
		}
		if ours[class] {
			out = append(out, ing)
		}
	}
	slices.SortFunc(out, func(a, b *networkingv1.Ingress) int {
		if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
			if a.CreationTimestamp.Before(&b.CreationTimestamp) {
				return -1
			}
			return 1
		}
		return strings.Compare(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name)
	})
	return out
}
