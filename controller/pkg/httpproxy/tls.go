package httpproxy

import (
	"fmt"

	contourv1 "github.com/projectcontour/contour/apis/projectcontour/v1"

	"isobar.dev/api/refgrant"
	"isobar.dev/controller/pkg/ir"
	"isobar.dev/controller/pkg/routerule"
)

// ChainTLS is what a root's TLS virtual host asks of its filter chain
// beyond its certificate: TLS versions ("" for the fleet's) and the
// validation of clients' certificates.
type ChainTLS struct {
	MinTLS, MaxTLS string
	Validation     *ir.ClientValidation
	// TCP is where the tcpproxy sends the virtual host's connections,
	// instead of routing their requests.
	TCP *ir.Destination
	// Fallback serves the virtual host to clients without a server name
	// too, on the chain that takes them (enableFallbackCertificate).
	Fallback bool
}

// chainTLS reads a root's virtualhost.tls versions and client validation;
// nil when it asks nothing beyond its certificate.
func (w *walk) chainTLS(root *contourv1.HTTPProxy) (*ChainTLS, *problem) {
	tls := root.Spec.VirtualHost.TLS
	out := &ChainTLS{}
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
	if cv := tls.ClientValidation; cv != nil {
		if f := refuseClientValidation(cv); f != "" {
			return nil, refused(contourv1.ConditionTypeTLSError, "NotSupported", fmt.Sprintf("virtualhost.tls.clientValidation.%s is not supported yet", f))
		}
		if cv.CACertificate == "" {
			return nil, refused(contourv1.ConditionTypeTLSError, "ClientValidationInvalid", "Spec.VirtualHost.TLS client validation is invalid: CA Secret must be specified")
		}
		ns, name := refgrant.ProxySecret(root.Namespace, cv.CACertificate)
		if !w.e.Granted(refgrant.From{Group: contourv1.GroupName, Kind: "HTTPProxy", Namespace: root.Namespace}, ns, refgrant.To{Kind: "Secret", Name: name}) {
			return nil, refused(contourv1.ConditionTypeTLSError, "DelegationNotPermitted",
				fmt.Sprintf("Spec.VirtualHost.TLS CA Secret %q is invalid: Secret %s/%s is not configured for certificate delegation", cv.CACertificate, ns, name))
		}
		secret, ok := w.e.Secret(ns, name)
		switch {
		case !ok:
			return nil, refused(contourv1.ConditionTypeTLSError, "ClientValidationInvalid",
				fmt.Sprintf("Spec.VirtualHost.TLS client validation is invalid: invalid CA Secret %q: Secret not found", ns+"/"+name))
		case len(secret.Data[routerule.CACertKey]) == 0:
			return nil, refused(contourv1.ConditionTypeTLSError, "ClientValidationInvalid",
				fmt.Sprintf("Spec.VirtualHost.TLS client validation is invalid: invalid CA Secret %q: empty %q key", ns+"/"+name, routerule.CACertKey))
		}
		out.Validation = &ir.ClientValidation{CA: secret.Data[routerule.CACertKey], CARefs: []string{"Secret " + ns + "/" + name}, Requested: cv.OptionalClientCertificate}
	}
	if tls.EnableFallbackCertificate {
		switch {
		case tls.ClientValidation != nil:
			return nil, refused(contourv1.ConditionTypeTLSError, "TLSIncompatibleFeatures", "Spec.Virtualhost.TLS fallback & client validation are incompatible")
		case !w.opts.FallbackChain:
			return nil, refused(contourv1.ConditionTypeTLSError, "FallbackNotPresent",
				"Spec.Virtualhost.TLS enabled fallback but the Gateway's ingress-https listener has a hostname: no filter chain takes connections without a server name")
		}
		out.Fallback = true
	}
	if out.MinTLS == "" && out.MaxTLS == "" && out.Validation == nil && !out.Fallback {
		return nil, nil
	}
	return out, nil
}
