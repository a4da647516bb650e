package offline

import (
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/types"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"isobar.dev/controller/pkg/resources"
	"isobar.dev/controller/pkg/translate"
	"isobar.dev/controller/pkg/unserved"
)

// unservedNotes are notes on the objects of res that no translated Gateway
// serves, each with why: a Gateway whose class is missing or another
// controller's, a route whose parents are none of the translated
// Gateways, an Ingress or HTTPProxy whose ingress class hands it to no
// translated Gateway. A cluster would leave them alone just as silently;
// offline, the user asked about them.
func unservedNotes(res *resources.Resources, r *translate.Result, controller string) []string {
	translated := map[types.NamespacedName]bool{}
	for k := range r.Status.Gateways {
		translated[k] = true
	}
	var out []string
	note := func(kind, namespace, name, why string) {
		out = append(out, fmt.Sprintf("not served: %s %s/%s: %s", kind, namespace, name, why))
	}
	for _, gw := range res.Gateways {
		if translated[types.NamespacedName{Namespace: gw.Namespace, Name: gw.Name}] {
			continue
		}
		if why := classProblem(res, gw, controller); why != "" {
			note("Gateway", gw.Namespace, gw.Name, why)
		}
	}
	routes := func(kind, namespace, name string) {
		if _, ok := r.Status.Routes[translate.RouteKey{Kind: kind, Namespace: namespace, Name: name}]; !ok {
			note(kind, namespace, name, "its parentRefs name none of the Gateways served here")
		}
	}
	for _, x := range res.HTTPRoutes {
		routes("HTTPRoute", x.Namespace, x.Name)
	}
	for _, x := range res.GRPCRoutes {
		routes("GRPCRoute", x.Namespace, x.Name)
	}
	for _, x := range res.TLSRoutes {
		routes("TLSRoute", x.Namespace, x.Name)
	}
	for _, x := range res.TCPRoutes {
		routes("TCPRoute", x.Namespace, x.Name)
	}
	for _, x := range res.UDPRoutes {
		routes("UDPRoute", x.Namespace, x.Name)
	}
	served := func(namespace, name string) bool {
		return translated[types.NamespacedName{Namespace: namespace, Name: name}]
	}
	for _, n := range unserved.ByClass(res, controller, served) {
		out = append(out, n.String())
	}
	return out
}

// classProblem says why gw's GatewayClass does not make it this
// controller's: missing from the input, or another controller's; "" when
// it is ours.
func classProblem(res *resources.Resources, gw *gatewayv1.Gateway, controller string) string {
	class := string(gw.Spec.GatewayClassName)
	i := slices.IndexFunc(res.GatewayClasses, func(c *gatewayv1.GatewayClass) bool { return c.Name == class })
	switch {
	case i < 0:
		return fmt.Sprintf("GatewayClass %q is not in the input", class)
	case string(res.GatewayClasses[i].Spec.ControllerName) != controller:
		return fmt.Sprintf("its GatewayClass %q belongs to controller %q, not %q", class, res.GatewayClasses[i].Spec.ControllerName, controller)
	}
	return ""
}

// chosenNotOurs are notes on the Gateways --gateway chose that are not
// this controller's: they are translated all the same (as the controller
// the operator runs for one Gateway does), which the status alone would
// not tell.
func chosenNotOurs(res *resources.Resources, chosen []types.NamespacedName, controller string) []string {
	var out []string
	for _, gw := range res.Gateways {
		if !slices.Contains(chosen, types.NamespacedName{Namespace: gw.Namespace, Name: gw.Name}) {
			continue
		}
		if why := classProblem(res, gw, controller); why != "" {
			out = append(out, fmt.Sprintf("Gateway %s/%s: %s; translated as this controller's because --gateway names it", gw.Namespace, gw.Name, why))
		}
	}
	return out
}
