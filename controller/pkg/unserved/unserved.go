// Package unserved says which Ingresses and HTTPProxies no Gateway serves,
// and why: their ingress class is missing, another controller's, hands
// them to no Gateway, or to one that is not served. Kubernetes leaves them
// alone without a word; translate lists them, and the controller whose
// Gateway controllerName mode would pick logs them and counts them.
package unserved

import (
	"fmt"

	"k8s.io/apimachinery/pkg/types"

	"isobar.dev/api/ingressclass"
	"isobar.dev/controller/pkg/resources"
)

// A Note is an object no Gateway serves, with why.
type Note struct {
	Kind, Namespace, Name, Why string
}

func (n Note) String() string {
	return fmt.Sprintf("not served: %s %s/%s: %s", n.Kind, n.Namespace, n.Name, n.Why)
}

// ByClass are the Ingresses and HTTPProxies of res whose ingress class
// hands them to no Gateway that served (by namespace and name) says is
// served: the Ingresses, then the HTTPProxies, in res's order.
func ByClass(res *resources.Resources, controller string, served func(namespace, name string) bool) []Note {
	var out []Note
	for _, ing := range res.Ingresses {
		if why := ingressclass.WhyNot(ingressclass.IngressClassOf(ing), res.IngressClasses, controller, served); why != "" {
			out = append(out, Note{"Ingress", ing.Namespace, ing.Name, why})
		}
	}
	for _, p := range res.HTTPProxies {
		if why := ingressclass.WhyNot(ingressclass.ProxyClass(p), res.IngressClasses, controller, served); why != "" {
			out = append(out, Note{"HTTPProxy", p.Namespace, p.Name, why})
		}
	}
	return out
}

// OursServed says whether a Gateway is served by a controller of
// controller's: it exists in res and its GatewayClass has that
// controllerName. Each such Gateway has a fleet of its own.
func OursServed(res *resources.Resources, controller string) func(namespace, name string) bool {
	ours := map[string]bool{}
	for _, c := range res.GatewayClasses {
		if string(c.Spec.ControllerName) == controller {
			ours[c.Name] = true
		}
	}
	served := map[types.NamespacedName]bool{}
	for _, gw := range res.Gateways {
		if ours[string(gw.Spec.GatewayClassName)] {
			served[types.NamespacedName{Namespace: gw.Namespace, Name: gw.Name}] = true
		}
	}
	return func(namespace, name string) bool {
		return served[types.NamespacedName{Namespace: namespace, Name: name}]
	}
}
