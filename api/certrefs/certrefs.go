// Package certrefs names the Secrets and ConfigMaps a Gateway's controller
// may read: the certificates and CA bundles its Gateway can use. The
// operator grants the controller get/list/watch on exactly these, by name
// (RBAC resourceNames), and the controller watches exactly these, one
// object at a time: a stolen controller token reads no other Secret.
//
// What a Gateway can use:
//   - its listeners' certificateRefs, and those of the ListenerSets it
//     allows; in another namespace only with a ReferenceGrant;
//   - spec.tls.frontend's CA references and spec.tls.backend's client
//     certificate, likewise;
//   - the TLS Secrets of the Ingresses it serves (ingressclass.Selected),
//     whether or not it has the listeners to serve them yet: the grant is
//     in place before the listener that needs it; in another namespace
//     (refgrant.IngressSecret) only with a TLSCertificateDelegation or a
//     ReferenceGrant there (refgrant.IngressDelegated); likewise the TLS Secrets
//     of the root HTTPProxies it serves (ingressclass.SelectedProxies), of
//     their own namespace or delegated to it by a TLSCertificateDelegation,
//     and the CA and revocation list Secrets their client validation and
//     their services' validation name (their routes' and tcpproxy's), and the profile's fallback
//     certificate for those that enable it, likewise; and the CA Secret of
//     the ExtensionService a root authorizes with (of the root's namespace,
//     or another whose ReferenceGrant allows it), of the ExtensionService's
//     namespace or delegated to it;
//   - the CA references of every BackendTLSPolicy. Which policies apply
//     depends on the Services the routes use, which the operator does not
//     follow (a route edit would be an RBAC write); a policy names objects
//     of its own namespace only, which its author chose to share. Likewise
//     the CA references of every XBackend's TLS, and its client
//     certificate (of its namespace, or another whose ReferenceGrant
//     allows it).
//
// References the controller would refuse (a kind other than Secret or
// ConfigMap, a missing ReferenceGrant) grant nothing.
package certrefs

import (
	"cmp"
	"slices"
	"strings"

	contourv1 "github.com/projectcontour/contour/apis/projectcontour/v1"
	contourv1alpha1 "github.com/projectcontour/contour/apis/projectcontour/v1alpha1"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	gatewayv1beta1 "sigs.k8s.io/gateway-api/apis/v1beta1"
	gatewayxv1alpha1 "sigs.k8s.io/gateway-api/apisx/v1alpha1"

	"isobar.dev/api/ingressclass"
	"isobar.dev/api/listenerset"
	"isobar.dev/api/refgrant"
	"isobar.dev/api/v1alpha1"
)

// Kinds of the objects a Ref names.
const (
	Secret    = "Secret"
	ConfigMap = "ConfigMap"
)

// Ref names one Secret or ConfigMap.
type Ref struct {
	Kind, Namespace, Name string
}

// Input is what decides a Gateway's references.
type Input struct {
	Gateway *gatewayv1.Gateway
	// ControllerName is the Gateway's class's controllerName, which the
	// IngressClasses it serves name.
	ControllerName string
	ListenerSets   []*gatewayv1.ListenerSet
	// Namespaces are read for their labels (allowedListeners selectors).
	Namespaces  []*corev1.Namespace
	Ingresses   []*networkingv1.Ingress
	HTTPProxies []*contourv1.HTTPProxy
	// TLSCertificateDelegations let root HTTPProxies use the TLS Secrets
	// of other namespaces.
	TLSCertificateDelegations []*contourv1.TLSCertificateDelegation
	// ExtensionServices are the authorization servers of root
	// HTTPProxies.
	ExtensionServices []*contourv1alpha1.ExtensionService
	// FallbackCertificate is the profile's httpproxy.fallbackCertificate,
	// which the roots that enable it use; nil for none.
	FallbackCertificate *v1alpha1.SecretReference
	IngressClasses      []*networkingv1.IngressClass
	ReferenceGrants     []*gatewayv1beta1.ReferenceGrant
	BackendTLSPolicies  []*gatewayv1.BackendTLSPolicy
	Backends            []*gatewayxv1alpha1.XBackend
}

// Of returns a Gateway's references, sorted by kind, namespace and name,
// without duplicates.
func Of(in Input) []Ref {
	gw := in.Gateway
	c := collector{grants: in.ReferenceGrants}
	gwFrom := refgrant.From{Group: gatewayv1.GroupName, Kind: "Gateway", Namespace: gw.Namespace}
	for _, l := range gw.Spec.Listeners {
		if l.TLS != nil {
			c.certificates(gwFrom, l.TLS.CertificateRefs)
		}
	}
	if tls := gw.Spec.TLS; tls != nil {
		if f := tls.Frontend; f != nil {
			c.cas(gwFrom, f.Default.Validation)
			for _, p := range f.PerPort {
				c.cas(gwFrom, p.TLS.Validation)
			}
		}
		if b := tls.Backend; b != nil && b.ClientCertificateRef != nil {
			c.certificates(gwFrom, []gatewayv1.SecretObjectReference{*b.ClientCertificateRef})
		}
	}
	var labels map[string]map[string]string
	if len(in.ListenerSets) > 0 {
		labels = make(map[string]map[string]string, len(in.Namespaces))
		for _, n := range in.Namespaces {
			labels[n.Name] = n.Labels
		}
	}
	namespaceLabels := func(ns string) (map[string]string, bool) { l, ok := labels[ns]; return l, ok }
	for _, cand := range listenerset.Of(gw, in.ListenerSets, namespaceLabels) {
		if cand.NotAllowed != "" {
			continue
		}
		from := refgrant.From{Group: gatewayv1.GroupName, Kind: "ListenerSet", Namespace: cand.Set.Namespace}
		for _, l := range cand.Set.Spec.Listeners {
			if l.TLS != nil {
				c.certificates(from, l.TLS.CertificateRefs)
			}
		}
	}
	for _, ing := range ingressclass.Selected(gw, in.ControllerName, in.IngressClasses, in.Ingresses) {
		for _, t := range ing.Spec.TLS {
			ns, name := refgrant.IngressSecret(ing, t.SecretName)
			if name != "" && refgrant.IngressDelegated(in.TLSCertificateDelegations, c.grants, ns, name, ing.Namespace) {
				c.add(Secret, ns, name)
			}
		}
	}
	for _, p := range ingressclass.SelectedProxies(gw, in.ControllerName, in.IngressClasses, in.HTTPProxies) {
		secretOf := func(from, secretName string) {
			ns, name := refgrant.ProxySecret(from, secretName)
			if name != "" && !strings.Contains(name, "/") && refgrant.Delegated(in.TLSCertificateDelegations, ns, name, from) {
				c.add(Secret, ns, name)
			}
		}
		proxySecret := func(secretName string) { secretOf(p.Namespace, secretName) }
		if x := c.extensionService(in.ExtensionServices, p); x != nil && x.Spec.UpstreamValidation != nil && x.Spec.UpstreamValidation.CACertificate != "" {
			secretOf(x.Namespace, x.Spec.UpstreamValidation.CACertificate)
		}
		if vh := p.Spec.VirtualHost; vh != nil && vh.TLS != nil {
			if vh.TLS.SecretName != "" {
				proxySecret(vh.TLS.SecretName)
			}
			if fb := in.FallbackCertificate; vh.TLS.EnableFallbackCertificate && fb != nil && refgrant.Delegated(in.TLSCertificateDelegations, fb.Namespace, fb.Name, p.Namespace) {
				c.add(Secret, fb.Namespace, fb.Name)
			}
			if cv := vh.TLS.ClientValidation; cv != nil {
				for _, name := range []string{cv.CACertificate, cv.CertificateRevocationList} {
					if name != "" {
						proxySecret(name)
					}
				}
			}
			for _, jp := range vh.JWTProviders {
				if v := jp.RemoteJWKS.UpstreamValidation; v != nil && v.CACertificate != "" {
					proxySecret(v.CACertificate)
				}
			}
		}
		var all []contourv1.Service
		for _, r := range p.Spec.Routes {
			all = append(all, r.Services...)
		}
		if tp := p.Spec.TCPProxy; tp != nil {
			all = append(all, tp.Services...)
		}
		for _, s := range all {
			if v := s.UpstreamValidation; v != nil && v.CACertificate != "" {
				proxySecret(v.CACertificate)
			}
		}
	}
	for _, p := range in.BackendTLSPolicies {
		for _, ref := range p.Spec.Validation.CACertificateRefs {
			if ref.Group == "" && (ref.Kind == Secret || ref.Kind == ConfigMap) {
				c.add(string(ref.Kind), p.Namespace, string(ref.Name))
			}
		}
	}
	for _, b := range in.Backends {
		tls := b.Spec.TLS
		if tls == nil {
			continue
		}
		for _, ref := range tls.Validation.CACertificateRefs {
			if ref.Group == "" && (ref.Kind == Secret || ref.Kind == ConfigMap) {
				c.add(string(ref.Kind), b.Namespace, string(ref.Name))
			}
		}
		if ref := tls.ClientCertificateRef; ref != nil {
			c.certificates(refgrant.From{Group: gatewayxv1alpha1.GroupName, Kind: "XBackend", Namespace: b.Namespace}, []gatewayv1.SecretObjectReference{*ref})
		}
	}
	slices.SortFunc(c.out, func(a, b Ref) int {
		return cmp.Or(cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	return slices.Compact(c.out)
}

type collector struct {
	grants []*gatewayv1beta1.ReferenceGrant
	out    []Ref
}

func (c *collector) add(kind, ns, name string) {
	c.out = append(c.out, Ref{Kind: kind, Namespace: ns, Name: name})
}

// extensionService is the ExtensionService root p authorizes with, where
// the translator would use it: of p's namespace, or of another whose
// ReferenceGrant allows it.
func (c *collector) extensionService(all []*contourv1alpha1.ExtensionService, p *contourv1.HTTPProxy) *contourv1alpha1.ExtensionService {
	vh := p.Spec.VirtualHost
	if vh == nil || vh.Authorization == nil {
		return nil
	}
	ref := vh.Authorization.ExtensionServiceRef
	ns := cmp.Or(ref.Namespace, p.Namespace)
	if !refgrant.Permitted(c.grants, refgrant.From{Group: contourv1.GroupName, Kind: "HTTPProxy", Namespace: p.Namespace}, ns,
		refgrant.To{Group: contourv1.GroupName, Kind: "ExtensionService", Name: ref.Name}) {
		return nil
	}
	for _, x := range all {
		if x.Namespace == ns && x.Name == ref.Name {
			return x
		}
	}
	return nil
}

// certificates adds certificateRefs: core Secrets, the kind's default.
func (c *collector) certificates(from refgrant.From, refs []gatewayv1.SecretObjectReference) {
	for _, ref := range refs {
		if ref.Group != nil && *ref.Group != "" || ref.Kind != nil && *ref.Kind != Secret {
			continue
		}
		c.addPermitted(from, Secret, ref.Namespace, string(ref.Name))
	}
}

// cas adds the CA references of a client certificate validation: core
// ConfigMaps or Secrets.
func (c *collector) cas(from refgrant.From, v *gatewayv1.FrontendTLSValidation) {
	if v == nil {
		return
	}
	for _, ref := range v.CACertificateRefs {
		kind := string(ref.Kind)
		if ref.Group != "" || kind != Secret && kind != ConfigMap {
			continue
		}
		c.addPermitted(from, kind, ref.Namespace, string(ref.Name))
	}
}

// addPermitted adds a reference from from, whose namespace defaults to
// from's, if a ReferenceGrant allows it where one is needed.
func (c *collector) addPermitted(from refgrant.From, kind string, namespace *gatewayv1.Namespace, name string) {
	ns := from.Namespace
	if namespace != nil {
		ns = string(*namespace)
	}
	if refgrant.Permitted(c.grants, from, ns, refgrant.To{Kind: kind, Name: name}) {
		c.add(kind, ns, name)
	}
}
