package gatewayapi

import (
	"fmt"

	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// insecureFrontend reports the ports whose client certificate validation
// lets in clients whose certificate does not verify.
func (t *gatewayTranslator) insecureFrontend() []string {
	if t.gw.Spec.TLS == nil || t.gw.Spec.TLS.Frontend == nil {
		return nil
	}
	f := t.gw.Spec.TLS.Frontend
	var out []string
	if v := f.Default.Validation; v != nil && v.Mode == gatewayv1.AllowInsecureFallback {
		out = append(out, "default")
	}
	for _, pp := range f.PerPort {
		if v := pp.TLS.Validation; v != nil && v.Mode == gatewayv1.AllowInsecureFallback {
			out = append(out, fmt.Sprintf("port %d", pp.Port))
		}
	}
	return out
}

// backendClientCertificate resolves spec.tls.backend.clientCertificateRef,
// the certificate Envoy presents to the backends it reaches over TLS
// (BackendTLSPolicy). One that does not resolve leaves backends without a
// client certificate and the Gateway's ResolvedRefs saying why.
func (t *gatewayTranslator) backendClientCertificate() {
	t.backendCert, t.backendCertErr = "", nil
	if t.gw.Spec.TLS == nil || t.gw.Spec.TLS.Backend == nil || t.gw.Spec.TLS.Backend.ClientCertificateRef == nil {
		return
	}
	name, err := t.validation().Certificate(*t.gw.Spec.TLS.Backend.ClientCertificateRef, t.validation().OwnerOf(nil))
	if err != nil {
		reason := gatewayv1.GatewayReasonInvalidClientCertificateRef
		if err.Reason == gatewayv1.ListenerReasonRefNotPermitted {
			reason = gatewayv1.GatewayReasonRefNotPermitted
		}
		t.backendCertErr = &gatewayProblem{Type: gatewayv1.GatewayConditionResolvedRefs, Reason: reason,
			Message: "spec.tls.backend.clientCertificateRef: " + err.Message + "; connections to backends present no client certificate"}
		return
	}
	t.backendCert = name
}
