// Package target is controllerName mode's rule (the static mode of Contour's Gateway API design):
// which Gateway the one controller of a controllerName serves. The
// controller serves it and the operator publishes its listeners on the
// static fleet's Service: one rule, so that both pick the same Gateway.
package target

import (
	"cmp"
	"fmt"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// Target is what a controller in controllerName mode serves, and what it
// passes over and why.
type Target struct {
	// Gateway is the Gateway served; zero when there is none.
	Gateway types.NamespacedName
	// Class is the served Gateway's class, in controllerName mode.
	Class string
	// PassedOverClasses and PassedOverGateways carry, per object, the
	// message for its Accepted condition.
	PassedOverClasses  map[string]string
	PassedOverGateways map[types.NamespacedName]string
}

// Pick applies controllerName mode's rule (Contour's Gateway API design): of the
// GatewayClasses with controllerName, the oldest is served, and of its
// Gateways, the oldest; the others are told which one won. Ties in age go
// to the lexically first name, so every replica picks the same.
func Pick(gatewayClasses []*gatewayv1.GatewayClass, allGateways []*gatewayv1.Gateway, controllerName string) Target {
	t := Target{PassedOverClasses: map[string]string{}, PassedOverGateways: map[types.NamespacedName]string{}}
	var classes []*gatewayv1.GatewayClass
	for _, c := range gatewayClasses {
		if string(c.Spec.ControllerName) == controllerName {
			classes = append(classes, c)
		}
	}
	if len(classes) == 0 {
		return t
	}
	slices.SortFunc(classes, func(a, b *gatewayv1.GatewayClass) int { return older(a.ObjectMeta, b.ObjectMeta) })
	t.Class = classes[0].Name
	for _, c := range classes[1:] {
		t.PassedOverClasses[c.Name] = fmt.Sprintf("controller %s serves one GatewayClass, the oldest: %s", controllerName, t.Class)
	}
	byClass := map[string][]*gatewayv1.Gateway{}
	for _, g := range allGateways {
		byClass[string(g.Spec.GatewayClassName)] = append(byClass[string(g.Spec.GatewayClassName)], g)
	}
	gateways := byClass[t.Class]
	if len(gateways) == 0 {
		return t
	}
	slices.SortFunc(gateways, func(a, b *gatewayv1.Gateway) int { return older(a.ObjectMeta, b.ObjectMeta) })
	t.Gateway = types.NamespacedName{Namespace: gateways[0].Namespace, Name: gateways[0].Name}
	for _, g := range gateways[1:] {
		t.PassedOverGateways[types.NamespacedName{Namespace: g.Namespace, Name: g.Name}] = fmt.Sprintf(
			"controller %s serves one Gateway of class %s, the oldest: %s", controllerName, t.Class, t.Gateway)
	}
	// Gateways of passed-over classes are not served either.
	for _, c := range classes[1:] {
		for _, g := range byClass[c.Name] {
			t.PassedOverGateways[types.NamespacedName{Namespace: g.Namespace, Name: g.Name}] = fmt.Sprintf(
				"its GatewayClass %s is not served: controller %s serves only %s", c.Name, controllerName, t.Class)
		}
	}
	return t
}

// older orders objects oldest first, then by namespace and name.
func older(a, b metav1.ObjectMeta) int {
	return cmp.Or(a.CreationTimestamp.Compare(b.CreationTimestamp.Time), cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
}
