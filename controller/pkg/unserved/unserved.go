// Package unserved says which objects no Gateway serves, and why: an
// Ingress or HTTPProxy whose ingress class is missing, another
// controller's, hands it to no Gateway, or to one that is not served; a
// route whose parentRefs name no Gateway that exists; a Gateway whose
// GatewayClass does not exist. Kubernetes leaves them alone without a
// word; translate lists them, and the controller whose Gateway
// controllerName mode would pick logs them and counts them.
package unserved

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/types"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

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

// Parents is what tells whether a route has a Gateway to serve it: the
// Gateways its parentRefs name, when every parentRef names a Gateway.
// Other is set when one names anything else (a ListenerSet, a mesh's
// Service), which this package does not judge; Default when the route
// asks for the default Gateways.
type Parents struct {
	Gateways []types.NamespacedName
	Other    bool
	Default  bool
}

// ParentsOf reads the parentRefs of a route in namespace ns.
func ParentsOf(ns string, refs []gatewayv1.ParentReference, defaulted bool) Parents {
	p := Parents{Default: defaulted}
	for _, ref := range refs {
		if ref.Group != nil && *ref.Group != gatewayv1.GroupName || ref.Kind != nil && *ref.Kind != "Gateway" {
			p.Other = true
			continue
		}
		refNS := ns
		if ref.Namespace != nil {
			refNS = string(*ref.Namespace)
		}
		p.Gateways = append(p.Gateways, types.NamespacedName{Namespace: refNS, Name: string(ref.Name)})
	}
	return p
}

// ByParents is the note on a route no Gateway can serve: it names no
// parent, or only Gateways that do not exist (exists says which do). A
// route that names a Gateway of another controller is that controller's
// to serve, and gets no note.
func ByParents(kind, namespace, name string, p Parents, exists func(namespace, name string) bool) (Note, bool) {
	if p.Other || p.Default {
		return Note{}, false
	}
	if len(p.Gateways) == 0 {
		return Note{kind, namespace, name, "it has no parentRefs and does not ask for the default Gateways"}, true
	}
	var missing []string
	for _, gw := range p.Gateways {
		if exists(gw.Namespace, gw.Name) {
			return Note{}, false
		}
		missing = append(missing, gw.String())
	}
	return Note{kind, namespace, name, "its parentRefs name Gateways that do not exist: " + strings.Join(missing, ", ")}, true
}

// WithoutClass are the Gateways of res whose GatewayClass does not exist:
// no controller serves them, and none writes their status.
func WithoutClass(res *resources.Resources) []Note {
	classes := make(map[string]bool, len(res.GatewayClasses))
	for _, c := range res.GatewayClasses {
		classes[c.Name] = true
	}
	var out []Note
	for _, gw := range res.Gateways {
		if !classes[string(gw.Spec.GatewayClassName)] {
			out = append(out, Note{"Gateway", gw.Namespace, gw.Name, fmt.Sprintf("its GatewayClass %q does not exist", gw.Spec.GatewayClassName)})
		}
	}
	return out
}

// Exists says whether res has a Gateway, by namespace and name.
func Exists(res *resources.Resources) func(namespace, name string) bool {
	all := make(map[types.NamespacedName]bool, len(res.Gateways))
	for _, gw := range res.Gateways {
		all[types.NamespacedName{Namespace: gw.Namespace, Name: gw.Name}] = true
	}
	return func(namespace, name string) bool {
		return all[types.NamespacedName{Namespace: namespace, Name: name}]
	}
}
