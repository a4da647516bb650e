package httpproxy

import (
	"fmt"

	contourv1 "github.com/projectcontour/contour/apis/projectcontour/v1"

	"isobar.dev/api/refgrant"
	"isobar.dev/controller/pkg/backend"
	"isobar.dev/controller/pkg/ir"
	"isobar.dev/controller/pkg/validate"
)

// chainTLS reads a root's virtualhost.tls versions and client validation;
// nil when it asks nothing beyond its certificate.
func (w *walk) chainTLS(root *contourv1.HTTPProxy) (*ir.ChainTLS, *problem) {
	tls := root.Spec.VirtualHost.TLS
	out := &ir.ChainTLS{}
	for _, v := range []struct {
		field string
		value string
		to    *string
	}{{"minimumProtocolVersion", tls.MinimumProtocolVersion, &out.MinTLS}, {"maximumProtocolVersion", tls.MaximumProtocolVersion, &out.MaxTLS}} {
		switch v.value {
		case "", "1.2", "1.3":
			*v.to = v.value
		default:
			return nil, refused(contourv1.ConditionTypeTLSError, "TLSConfigNotValid", fmt.Sprintf("Spec.VirtualHost.TLS.%s %q is not 1.2 or 1.3", v.field, v.value))
		}
	}
	if out.MinTLS == "1.3" && out.MaxTLS == "1.2" {
		return nil, refused(contourv1.ConditionTypeTLSError, "TLSConfigNotValid", "Spec.Virtualhost.TLS the minimum protocol version is greater than the maximum protocol version")
	}
	// Features the fallback certificate cannot serve come first, in
	// Contour's order, before anything of them is read.
	if tls.EnableFallbackCertificate {
		vh := root.Spec.VirtualHost
		switch {
		case tls.ClientValidation != nil:
			return nil, refused(contourv1.ConditionTypeTLSError, "TLSIncompatibleFeatures", "Spec.Virtualhost.TLS fallback & client validation are incompatible")
		case vh.AuthorizationConfigured():
			return nil, refused(contourv1.ConditionTypeTLSError, "TLSIncompatibleFeatures", "Spec.Virtualhost.TLS fallback & client authorization are incompatible")
		case len(vh.JWTProviders) > 0:
			// The fallback chain serves every fallback root's routes on
			// one connection manager, which cannot hold each root's
			// providers.
			return nil, refused(contourv1.ConditionTypeTLSError, "TLSIncompatibleFeatures", "Spec.Virtualhost.TLS fallback & JWT providers are incompatible")
		}
		if bad := w.fallback(root); bad != nil {
			return nil, bad
		}
		out.Fallback = true
	}
	if cv := tls.ClientValidation; cv != nil {
		var bad *problem
		if out.Validation, bad = w.clientValidation(root, cv); bad != nil {
			return nil, bad
		}
		if f := cv.ForwardClientCertificate; f != nil {
			out.Forward = &ir.ForwardClientCert{Subject: f.Subject, Cert: f.Cert, Chain: f.Chain, DNS: f.DNS, URI: f.URI}
		}
	}
	if out.MinTLS == "" && out.MaxTLS == "" && out.Validation == nil && !out.Fallback {
		return nil, nil
	}
	return out, nil
}

// CRLKey is the key of a revocation list Secret's PEM lists, as Contour
// reads it.
const CRLKey = "crl.pem"

// clientValidation is how a TLS virtual host checks clients'
// certificates: against its CA Secret's ca.crt (none with
// skipClientCertValidation, which asks for one and accepts any), required
// unless optionalClientCertificate, and against a revocation list Secret.
// Secrets of another namespace need a delegation, as the certificate does.
func (w *walk) clientValidation(root *contourv1.HTTPProxy, cv *contourv1.DownstreamValidation) (*ir.ClientValidation, *problem) {
	invalid := func(format string, args ...any) (*ir.ClientValidation, *problem) {
		return nil, refused(contourv1.ConditionTypeTLSError, "ClientValidationInvalid", "Spec.VirtualHost.TLS client validation is invalid: "+fmt.Sprintf(format, args...))
	}
	if f := refuseClientValidation(cv); f != "" {
		return nil, refused(contourv1.ConditionTypeTLSError, "NotSupported", fmt.Sprintf("virtualhost.tls.clientValidation.%s is not supported yet", f))
	}
	switch {
	case cv.CACertificate == "" && !cv.SkipClientCertValidation:
		return invalid("CA Secret must be specified")
	case cv.CertificateRevocationList != "" && cv.CACertificate == "":
		return invalid("a CRL Secret needs a CA Secret to check against")
	case cv.OnlyVerifyLeafCertCrl && cv.CertificateRevocationList == "":
		return invalid("crlOnlyVerifyLeafCert needs a CRL Secret")
	}
	out := &ir.ClientValidation{Requested: cv.OptionalClientCertificate, Unverified: cv.SkipClientCertValidation, CRLLeafOnly: cv.OnlyVerifyLeafCertCrl}
	for _, ref := range []struct {
		what, secretName, key string
		to                    *[]byte
	}{{"CA", cv.CACertificate, backend.CACertKey, &out.CA}, {"CRL", cv.CertificateRevocationList, CRLKey, &out.CRL}} {
		if ref.secretName == "" {
			continue
		}
		ns, name := refgrant.ProxySecret(root.Namespace, ref.secretName)
		if !w.e.Granted(refgrant.From{Group: contourv1.GroupName, Kind: "HTTPProxy", Namespace: root.Namespace}, ns, refgrant.To{Kind: "Secret", Name: name}) {
			return nil, refused(contourv1.ConditionTypeTLSError, "DelegationNotPermitted",
				fmt.Sprintf("Spec.VirtualHost.TLS %s Secret %q is invalid: Secret %s/%s is not configured for certificate delegation", ref.what, ref.secretName, ns, name))
		}
		secret, ok := w.e.Secret(ns, name)
		switch {
		case !ok:
			return invalid("invalid %s Secret %q: Secret not found", ref.what, ns+"/"+name)
		case len(secret.Data[ref.key]) == 0:
			return invalid("invalid %s Secret %q: empty %q key", ref.what, ns+"/"+name, ref.key)
		}
		check := validate.CABundle
		if ref.key == CRLKey {
			check = validate.CRLs
		}
		if err := check(secret.Data[ref.key]); err != nil {
			return invalid("invalid %s Secret %q: %q %v", ref.what, ns+"/"+name, ref.key, err)
		}
		*ref.to = secret.Data[ref.key]
		out.CARefs = append(out.CARefs, "Secret "+ns+"/"+name)
	}
	return out, nil
}

// fallback checks that a root with enableFallbackCertificate can be served
// to clients without a server name: with the profile's fallback
// certificate, a Secret of the root's namespace or delegated to it, on an
// ingress-https listener without a hostname.
func (w *walk) fallback(root *contourv1.HTTPProxy) *problem {
	fb := w.opts.FallbackCertificate
	switch {
	case fb == nil:
		return refused(contourv1.ConditionTypeTLSError, "FallbackNotPresent",
			"Spec.Virtualhost.TLS enabled fallback but the fallback certificate Secret is not configured in the profile (httpproxy.fallbackCertificate)")
	case !w.opts.FallbackChain:
		return refused(contourv1.ConditionTypeTLSError, "FallbackNotPresent",
			"Spec.Virtualhost.TLS enabled fallback but the Gateway's ingress-https listener has a hostname: no filter chain takes connections without a server name")
	case !w.e.Granted(refgrant.From{Group: contourv1.GroupName, Kind: "HTTPProxy", Namespace: root.Namespace}, fb.Namespace, refgrant.To{Kind: "Secret", Name: fb.Name}):
		return refused(contourv1.ConditionTypeTLSError, "FallbackNotDelegated", fmt.Sprintf("Spec.VirtualHost.TLS Secret %q is not configured for certificate delegation", fb.String()))
	}
	if _, ok := w.e.Secret(fb.Namespace, fb.Name); !ok {
		return refused(contourv1.ConditionTypeTLSError, "FallbackNotValid", fmt.Sprintf("Spec.Virtualhost.TLS Secret %q fallback certificate is invalid: Secret not found", fb.String()))
	}
	return nil
}

// virtualHostTLS checks a root's virtualhost.tls, and reads what its
// filter chain asks beyond its certificate into the tree; false, with the
// root's error, when the virtual host cannot be served. A passthrough
// virtual host has no certificate: its connections go to the tcpproxy
// as they come.
func (w *walk) virtualHostTLS(root *contourv1.HTTPProxy, httpsPort int32) bool {
	st, vh := w.status(root), root.Spec.VirtualHost
	fail := func(typ, reason, format string, args ...any) bool {
		st.Valid.AddErrorf(typ, reason, format, args...)
		return false
	}
	if f := refuseTLS(vh.TLS); f != "" {
		return fail(contourv1.ConditionTypeTLSError, "NotSupported", "virtualhost.tls.%s is not supported yet", f)
	}
	if httpsPort == 0 {
		return fail(contourv1.ConditionTypeListenerError, "ErrorIdentifyingListener", "the Gateway has no ingress-https listener to serve TLS on")
	}
	if vh.TLS.Passthrough {
		switch {
		case vh.TLS.SecretName != "":
			return fail(contourv1.ConditionTypeTLSError, "TLSConfigNotValid", "Spec.VirtualHost.TLS: both Passthrough and SecretName were specified")
		case vh.TLS.ClientValidation != nil:
			return fail(contourv1.ConditionTypeTLSError, "TLSIncompatibleFeatures", "Spec.VirtualHost.TLS passthrough cannot be combined with tls.clientValidation")
		case vh.TLS.EnableFallbackCertificate:
			return fail(contourv1.ConditionTypeTLSError, "TLSIncompatibleFeatures", "Spec.VirtualHost.TLS: both Passthrough and enableFallbackCertificate were specified")
		case vh.TLS.MinimumProtocolVersion != "" || vh.TLS.MaximumProtocolVersion != "":
			// Envoy does not terminate the connection to bound its versions.
			return fail(contourv1.ConditionTypeTLSError, "TLSIncompatibleFeatures", "Spec.VirtualHost.TLS passthrough cannot be combined with protocol versions")
		case root.Spec.TCPProxy == nil:
			return fail(contourv1.ConditionTypeTCPProxyError, "NothingDefined", "Spec.VirtualHost.TLS passthrough needs a Spec.TCPProxy to pass the connections to")
		}
		return true
	}
	if vh.TLS.SecretName == "" {
		return fail(contourv1.ConditionTypeTLSError, "TLSConfigNotValid", "Spec.VirtualHost.TLS: neither Passthrough nor SecretName were specified")
	}
	ns, name, err := TLSSecret(root)
	if err != nil {
		return fail(contourv1.ConditionTypeTLSError, "TLSConfigNotValid", "%v", err)
	}
	if !w.e.Granted(refgrant.From{Group: contourv1.GroupName, Kind: "HTTPProxy", Namespace: root.Namespace}, ns, refgrant.To{Kind: "Secret", Name: name}) {
		return fail(contourv1.ConditionTypeTLSError, "DelegationNotPermitted", "Spec.VirtualHost.TLS Secret %q certificate delegation not permitted", vh.TLS.SecretName)
	}
	if _, ok := w.e.Secret(ns, name); !ok {
		return fail(contourv1.ConditionTypeTLSError, "SecretNotValid", "Spec.VirtualHost.TLS Secret %q is invalid: Secret not found", vh.TLS.SecretName)
	}
	var bad *problem
	if w.tree.TLS, bad = w.chainTLS(root); bad != nil {
		return fail(bad.Type, bad.Reason, "%s", bad.Message)
	}
	return true
}
