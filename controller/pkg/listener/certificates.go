package listener

import (
	"crypto/tls"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"isobar.dev/api/refgrant"
	"isobar.dev/controller/pkg/condition"
	"isobar.dev/controller/pkg/ir"
)

// checkTLS resolves the certificates of HTTPS and terminating TLS listeners.
func (v *Validation) checkTLS(l *Listener) {
	p := l.Spec.Protocol
	if p != gatewayv1.HTTPSProtocolType && p != gatewayv1.TLSProtocolType {
		return
	}
	if l.Spec.TLS == nil {
		l.refuse(gatewayv1.ListenerConditionAccepted, gatewayv1.ListenerReasonUnsupportedValue,
			fmt.Sprintf("a %s listener needs tls", p))
		return
	}
	mode := gatewayv1.TLSModeTerminate
	if l.Spec.TLS.Mode != nil {
		mode = *l.Spec.TLS.Mode
	}
	if mode == gatewayv1.TLSModePassthrough {
		if p == gatewayv1.HTTPSProtocolType {
			l.refuse(gatewayv1.ListenerConditionAccepted, gatewayv1.ListenerReasonUnsupportedValue,
				"tls.mode Passthrough is not allowed on an HTTPS listener; use protocol TLS")
		}
		return
	}
	if len(l.Spec.TLS.CertificateRefs) == 0 {
		l.BadCertificates = true
		l.report(condition.UnresolvedListenerRef(gatewayv1.ListenerReasonInvalidCertificateRef,
			"tls.certificateRefs is empty; a terminating listener needs a certificate"))
		return
	}
	for _, ref := range l.Spec.TLS.CertificateRefs {
		name, err := v.Certificate(ref, v.OwnerOf(l))
		if err != nil {
			l.BadCertificates = true
			l.report(err)
			continue
		}
		l.Certificates = append(l.Certificates, name)
	}
}

// Certificate checks one certificateRef of from (the Gateway, or a
// ListenerSet: a ReferenceGrant to one is not one to the other) and adds
// its Secret to the IR, returning the Secret's IR name.
func (v *Validation) Certificate(ref gatewayv1.SecretObjectReference, from Owner) (string, *Problem) {
	group, kind := "", "Secret"
	if ref.Group != nil {
		group = string(*ref.Group)
	}
	if ref.Kind != nil {
		kind = string(*ref.Kind)
	}
	ns := from.Namespace
	if ref.Namespace != nil {
		ns = string(*ref.Namespace)
	}
	if group != "" || kind != "Secret" {
		return "", condition.UnresolvedListenerRef(gatewayv1.ListenerReasonInvalidCertificateRef,
			fmt.Sprintf("certificateRef %s/%s %s: only core Secrets are supported", group, kind, ref.Name))
	}
	if ns != from.Namespace && !v.Env.Granted(refgrant.From{Group: from.Group, Kind: from.Kind, Namespace: from.Namespace}, ns, refgrant.To{Kind: "Secret", Name: string(ref.Name)}) {
		return "", condition.UnresolvedListenerRef(gatewayv1.ListenerReasonRefNotPermitted,
			fmt.Sprintf("certificateRef to Secret %s/%s is not permitted: no %s in namespace %s allows it", ns, ref.Name, from.Grant, ns))
	}
	secret, ok := v.Env.Secret(ns, string(ref.Name))
	if !ok {
		return "", condition.UnresolvedListenerRef(gatewayv1.ListenerReasonInvalidCertificateRef,
			fmt.Sprintf("Secret %s/%s does not exist", ns, ref.Name))
	}
	name := ns + "/" + string(ref.Name)
	if _, done := v.Secrets[name]; done {
		return name, nil
	}
	crt, key := secret.Data[corev1.TLSCertKey], secret.Data[corev1.TLSPrivateKeyKey]
	if _, err := tls.X509KeyPair(crt, key); err != nil {
		// The error names what is wrong, never the key material.
		return "", condition.UnresolvedListenerRef(gatewayv1.ListenerReasonInvalidCertificateRef,
			fmt.Sprintf("Secret %s/%s does not hold a usable certificate and key in tls.crt and tls.key: %v", ns, ref.Name, err))
	}
	v.Secrets[name] = &ir.Secret{Name: name, Certificate: crt, PrivateKey: key}
	return name, nil
}
