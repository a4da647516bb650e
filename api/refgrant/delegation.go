package refgrant

import (
	"slices"
	"strings"

	contourv1 "github.com/projectcontour/contour/apis/projectcontour/v1"
	networkingv1 "k8s.io/api/networking/v1"
	gatewayv1beta1 "sigs.k8s.io/gateway-api/apis/v1beta1"
)

// Delegates reports whether d, a TLSCertificateDelegation in a Secret's
// namespace, lets the HTTPProxies of namespace ns use that Secret, named
// name: Contour's rule for a TLS virtual host's certificate in another
// namespace ("*" among the target namespaces means every namespace).
// HTTPProxies follow delegations only, not ReferenceGrants, as in Contour.
func Delegates(d *contourv1.TLSCertificateDelegation, name, ns string) bool {
	for _, c := range d.Spec.Delegations {
		if c.SecretName == name && (slices.Contains(c.TargetNamespaces, ns) || slices.Contains(c.TargetNamespaces, "*")) {
			return true
		}
	}
	return false
}

// Delegated reports whether an HTTPProxy of namespace ns may use the
// Secret secretNS/name: its own namespace's always, another's with a
// TLSCertificateDelegation there. delegations may hold those of every
// namespace.
func Delegated(delegations []*contourv1.TLSCertificateDelegation, secretNS, name, ns string) bool {
	if secretNS == ns {
		return true
	}
	return slices.ContainsFunc(delegations, func(d *contourv1.TLSCertificateDelegation) bool {
		return d.Namespace == secretNS && Delegates(d, name, ns)
	})
}

// ProxySecret is the namespace and name of the Secret an HTTPProxy of
// namespace ns names as secretName: "name" for its own namespace's,
// "namespace/name" for another's.
func ProxySecret(ns, secretName string) (string, string) {
	if other, name, ok := strings.Cut(secretName, "/"); ok {
		return other, name
	}
	return ns, secretName
}

// IngressCertNamespace is Contour's annotation naming the namespace of the
// Secrets an Ingress's spec.tls names without one.
const IngressCertNamespace = "projectcontour.io/tls-cert-namespace"

// IngressSecret is the namespace and name of the Secret an Ingress names
// in spec.tls, as Contour reads secretName: "namespace/name", or a name
// in the namespace IngressCertNamespace gives, or else the Ingress's own.
func IngressSecret(ing *networkingv1.Ingress, secretName string) (string, string) {
	if other, name, ok := strings.Cut(secretName, "/"); ok {
		return other, name
	}
	if ns := ing.Annotations[IngressCertNamespace]; ns != "" {
		return ns, secretName
	}
	return ing.Namespace, secretName
}

// IngressDelegated reports whether an Ingress of namespace ns may use the
// Secret secretNS/name: its own namespace's always, another's when a
// TLSCertificateDelegation there delegates it (Contour's rule) or a
// ReferenceGrant there allows Ingresses of ns (the Gateway API's).
func IngressDelegated(delegations []*contourv1.TLSCertificateDelegation, grants []*gatewayv1beta1.ReferenceGrant, secretNS, name, ns string) bool {
	return Delegated(delegations, secretNS, name, ns) ||
		Permitted(grants, From{Group: networkingv1.GroupName, Kind: "Ingress", Namespace: ns}, secretNS, To{Kind: "Secret", Name: name})
}
