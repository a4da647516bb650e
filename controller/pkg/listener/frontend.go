package listener

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
func (v *Validation) frontendTLS(port gatewayv1.PortNumber) *gatewayv1.FrontendTLSValidation {
	if v.Gateway.Spec.TLS == nil || v.Gateway.Spec.TLS.Frontend == nil {
		return nil
	}
	f := v.Gateway.Spec.TLS.Frontend
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
func (v *Validation) checkFrontendValidation(l *Listener) {
	if l.Spec.Protocol != gatewayv1.HTTPSProtocolType {
		return
	}
	fv := v.frontendTLS(l.Spec.Port)
	if fv == nil {
		return
	}
	cv := &ir.ClientValidation{Optional: fv.Mode == gatewayv1.AllowInsecureFallback}
	var bundle bytes.Buffer
	for _, ref := range fv.CACertificateRefs {
		name, ca, err := v.resolveCA(ref)
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
	l.ClientValidation = cv
}

// resolveCA checks one caCertificateRef: a ConfigMap or Secret with a PEM
// bundle under ca.crt, in another namespace only with a ReferenceGrant.
func (v *Validation) resolveCA(ref gatewayv1.ObjectReference) (string, []byte, *Problem) {
	kind := string(ref.Kind)
	ns := v.Gateway.Namespace
	if ref.Namespace != nil {
		ns = string(*ref.Namespace)
	}
	if ref.Group != "" || kind != "ConfigMap" && kind != "Secret" {
		return "", nil, condition.UnresolvedListenerRef(gatewayv1.ListenerReasonInvalidCACertificateKind,
			fmt.Sprintf("caCertificateRef %s %s: only core ConfigMaps and Secrets hold CA certificates", groupKind(string(ref.Group), kind), ref.Name))
	}
	name := fmt.Sprintf("%s %s/%s", kind, ns, ref.Name)
	if ns != v.Gateway.Namespace && !v.Env.Granted(refgrant.From{Group: gatewayv1.GroupName, Kind: "Gateway", Namespace: v.Gateway.Namespace}, ns, refgrant.To{Kind: kind, Name: string(ref.Name)}) {
		return "", nil, condition.UnresolvedListenerRef(gatewayv1.ListenerReasonRefNotPermitted,
			fmt.Sprintf("caCertificateRef to %s is not permitted: no ReferenceGrant in namespace %s allows it", name, ns))
	}
	var ca []byte
	found := false
	if kind == "ConfigMap" {
		if cm, ok := v.Env.ConfigMap(ns, string(ref.Name)); ok {
			ca, found = []byte(cm.Data[caKey]), true
		}
	} else if s, ok := v.Env.Secret(ns, string(ref.Name)); ok {
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

func groupKind(group, kind string) string {
	if group == "" {
		return kind
	}
	return kind + "." + group
}
