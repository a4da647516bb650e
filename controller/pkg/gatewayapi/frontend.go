package gatewayapi

import (
	"bytes"
	"fmt"

	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"isobar.dev/api/refgrant"
	"isobar.dev/controller/pkg/condition"
	"isobar.dev/controller/pkg/ir"
	"isobar.dev/controller/pkg/validate"
)

// caKey is the key of a CA bundle in a ConfigMap or Secret, as the Gateway
// API and BackendTLSPolicy name it.
const caKey = "ca.crt"

// frontendTLS is the spec.tls.frontend configuration of a port: its
// perPort entry, else the default.
func (t *gatewayTranslator) frontendTLS(port gatewayv1.PortNumber) *gatewayv1.FrontendTLSValidation {
	if t.gw.Spec.TLS == nil || t.gw.Spec.TLS.Frontend == nil {
		return nil
	}
	f := t.gw.Spec.TLS.Frontend
	for _, pp := range f.PerPort {
		if pp.Port == port {
			return pp.TLS.Validation
		}
	}
	return f.Default.Validation
}

// checkFrontendValidation resolves the client certificate validation of an
// HTTPS listener (spec.tls.frontend, by port). Each CA reference that does
// not resolve makes ResolvedRefs false with the reason the specification
// names; when none resolves the listener is not accepted
// (NoValidCACertificate): serving it without the validation asked for
// would let in the clients the owner meant to keep out.
func (t *gatewayTranslator) checkFrontendValidation(l *listener) {
	if l.spec.Protocol != gatewayv1.HTTPSProtocolType {
		return
	}
	v := t.frontendTLS(l.spec.Port)
	if v == nil {
		return
	}
	cv := &ir.ClientValidation{Optional: v.Mode == gatewayv1.AllowInsecureFallback}
	var bundle bytes.Buffer
	for _, ref := range v.CACertificateRefs {
		name, ca, err := t.resolveCA(ref)
		if err != nil {
			l.report(err)
			continue
		}
		cv.CARefs = append(cv.CARefs, name)
		bundle.Write(ca)
		if !bytes.HasSuffix(ca, []byte("\n")) {
			bundle.WriteByte('\n')
		}
	}
	if len(cv.CARefs) == 0 {
		l.refuse(gatewayv1.ListenerConditionAccepted, gatewayv1.ListenerReasonNoValidCACertificate,
			"none of the client certificate validation's caCertificateRefs (spec.tls.frontend) resolves: see ResolvedRefs")
		return
	}
	cv.CA = bundle.Bytes()
	l.clientValidation = cv
}

// resolveCA checks one caCertificateRef: a ConfigMap or Secret with a PEM
// bundle under ca.crt, in another namespace only with a ReferenceGrant.
func (t *gatewayTranslator) resolveCA(ref gatewayv1.ObjectReference) (string, []byte, *listenerProblem) {
	kind := string(ref.Kind)
	ns := t.gw.Namespace
	if ref.Namespace != nil {
		ns = string(*ref.Namespace)
	}
	if ref.Group != "" || kind != "ConfigMap" && kind != "Secret" {
		return "", nil, condition.UnresolvedListenerRef(gatewayv1.ListenerReasonInvalidCACertificateKind,
			fmt.Sprintf("caCertificateRef %s %s: only core ConfigMaps and Secrets hold CA certificates", groupKind(string(ref.Group), kind), ref.Name))
	}
	name := fmt.Sprintf("%s %s/%s", kind, ns, ref.Name)
	if ns != t.gw.Namespace && !t.env.Granted(refgrant.From{Group: gatewayv1.GroupName, Kind: "Gateway", Namespace: t.gw.Namespace}, ns, refgrant.To{Kind: kind, Name: string(ref.Name)}) {
		return "", nil, condition.UnresolvedListenerRef(gatewayv1.ListenerReasonRefNotPermitted,
			fmt.Sprintf("caCertificateRef to %s is not permitted: no ReferenceGrant in namespace %s allows it", name, ns))
	}
	var ca []byte
	found := false
	if kind == "ConfigMap" {
		if cm, ok := t.env.ConfigMap(ns, string(ref.Name)); ok {
			ca, found = []byte(cm.Data[caKey]), true
		}
	} else if s, ok := t.env.Secret(ns, string(ref.Name)); ok {
		ca, found = s.Data[caKey], true
	}
	if !found {
		return "", nil, condition.UnresolvedListenerRef(gatewayv1.ListenerReasonInvalidCACertificateRef, name+" does not exist")
	}
	if err := validate.CABundle(ca); err != nil {
		return "", nil, condition.UnresolvedListenerRef(gatewayv1.ListenerReasonInvalidCACertificateRef, fmt.Sprintf("%s: %s: %v", name, caKey, err))
	}
	return name, ca, nil
}

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

func groupKind(group, kind string) string {
	if group == "" {
		return kind
	}
	return kind + "." + group
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
	name, err := t.resolveCertificate(*t.gw.Spec.TLS.Backend.ClientCertificateRef, t.ownerOf(nil))
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
