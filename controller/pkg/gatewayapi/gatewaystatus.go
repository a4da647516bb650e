package gatewayapi

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/types"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"isobar.dev/api/addresses"
	"isobar.dev/controller/pkg/listener"
)

// writeGatewayStatus records the Gateway's conditions and its listeners'.
// The Gateway's Programmed condition is not the translation's alone:
// package programmed sets it, from these conditions and the data plane.
func (t *gatewayTranslator) writeGatewayStatus(svc profileServices) {
	st := &gatewayv1.GatewayStatus{}
	if attached := t.writeListenerSetStatus(); !t.env.Unserved("ListenerSet") {
		// Reported where ListenerSets can exist.
		st.AttachedListenerSets = &attached
	}
	var own []*listener.Listener
	for _, l := range t.listeners {
		if l.Set == nil {
			own = append(own, l)
			st.Listeners = append(st.Listeners, listenerStatus(l))
		}
	}
	usable, invalid, conflicted := classify(own)
	c := gatewayConditions{Generation: t.gw.Generation}
	accepted := gatewayv1.GatewayConditionAccepted
	_, unsupported := addresses.Of(t.gw)
	switch {
	case unsupported != nil:
		// The operator provisions no fleet for it, so the live system
		// says this (offline translation says the same).
		c.Set(accepted, false, gatewayv1.GatewayReasonUnsupportedAddress, unsupported.Error())
	case len(own) > 0 && len(usable) == 0:
		c.Set(accepted, false, gatewayv1.GatewayReasonListenersNotValid, "no listener is valid: "+listenerSummary(usable, invalid, conflicted))
	case len(invalid)+len(conflicted) > 0:
		c.Set(accepted, true, gatewayv1.GatewayReasonListenersNotValid, listenerSummary(usable, invalid, conflicted))
	default:
		c.Set(accepted, true, gatewayv1.GatewayReasonAccepted, "Gateway is accepted")
	}
	switch {
	case t.backendCertErr != nil:
		c.Set(t.backendCertErr.Type, false, t.backendCertErr.Reason, t.backendCertErr.Message)
	case t.backendCert != "":
		c.Set(gatewayv1.GatewayConditionResolvedRefs, true, gatewayv1.GatewayReasonResolvedRefs, "spec.tls.backend.clientCertificateRef "+t.backendCert+" is presented to TLS backends")
	}
	if insecure := t.insecureFrontend(); len(insecure) > 0 {
		c.Set(gatewayv1.GatewayConditionInsecureFrontendValidationMode, true, gatewayv1.GatewayReasonConfigurationChanged,
			fmt.Sprintf("client certificate validation lets in clients without a valid certificate (AllowInsecureFallback): %s", strings.Join(insecure, ", ")))
	}
	t.setDefaultCondition(&c)
	t.setTracingCondition(&c, svc.tracingProblem)
	t.setExtAuthCondition(&c, svc.extAuthProblem)
	st.Conditions = c.Sorted()
	t.status.Gateways[types.NamespacedName{Namespace: t.gw.Namespace, Name: t.gw.Name}] = st
}

// listenerSummary says which listeners conflict, which are otherwise not
// valid, and which are accepted, as the specification asks of the
// ListenersNotValid message.
func listenerSummary(usable, invalid, conflicted []string) string {
	var parts []string
	if len(conflicted) > 0 {
		parts = append(parts, fmt.Sprintf("listeners %v conflict", conflicted))
	}
	if len(invalid) > 0 {
		parts = append(parts, fmt.Sprintf("listeners %v are not valid", invalid))
	}
	if len(usable) > 0 {
		parts = append(parts, fmt.Sprintf("listeners %v are accepted", usable))
	}
	return strings.Join(parts, "; ")
}
