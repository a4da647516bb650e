package gatewayapi

import (
	"fmt"

	"k8s.io/apimachinery/pkg/types"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// writeGatewayStatus records the Gateway's conditions and its listeners'.
// Programmed is what the controller sets once Envoy has acknowledged the
// configuration; the controller overrides it while that is not so.
func (t *gatewayTranslator) writeGatewayStatus() {
	st := &gatewayv1.GatewayStatus{}
	usable := 0
	var invalid []string
	for _, l := range t.listeners {
		if l.usable() {
			usable++
		} else {
			invalid = append(invalid, string(l.spec.Name))
		}
		kinds := l.kinds
		if kinds == nil {
			kinds = []gatewayv1.RouteGroupKind{}
		}
		st.Listeners = append(st.Listeners, gatewayv1.ListenerStatus{
			Name:           l.spec.Name,
			SupportedKinds: kinds,
			AttachedRoutes: l.attached,
			Conditions:     l.conds.sorted(),
		})
	}
	c := conditions{generation: t.gw.Generation}
	accepted, programmed := string(gatewayv1.GatewayConditionAccepted), string(gatewayv1.GatewayConditionProgrammed)
	switch {
	case len(t.listeners) == 0:
		c.set(accepted, true, string(gatewayv1.GatewayReasonAccepted), "Gateway is accepted")
		c.set(programmed, true, string(gatewayv1.GatewayReasonProgrammed), "Gateway has no listeners")
	case usable == 0:
		c.set(accepted, false, string(gatewayv1.GatewayReasonListenersNotValid), fmt.Sprintf("no listener is valid: %v", invalid))
		c.set(programmed, false, string(gatewayv1.GatewayReasonInvalid), "no listener can be programmed")
	case len(invalid) > 0:
		c.set(accepted, true, string(gatewayv1.GatewayReasonListenersNotValid), fmt.Sprintf("listeners %v are not valid; the others are", invalid))
		c.set(programmed, true, string(gatewayv1.GatewayReasonProgrammed), "Gateway is programmed")
	default:
		c.set(accepted, true, string(gatewayv1.GatewayReasonAccepted), "Gateway is accepted")
		c.set(programmed, true, string(gatewayv1.GatewayReasonProgrammed), "Gateway is programmed")
	}
	st.Conditions = c.sorted()
	t.status.Gateways[types.NamespacedName{Namespace: t.gw.Namespace, Name: t.gw.Name}] = st
}
