package certrefs

import (
	"slices"
	"testing"

	contourv1 "github.com/projectcontour/contour/apis/projectcontour/v1"

	"isobar.dev/api/v1alpha1"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	gatewayv1beta1 "sigs.k8s.io/gateway-api/apis/v1beta1"
)

func TestOf(t *testing.T) {
	ns := func(s string) *gatewayv1.Namespace { n := gatewayv1.Namespace(s); return &n }
	kind := func(s string) *gatewayv1.Kind { k := gatewayv1.Kind(s); return &k }
	https := func(name string, refs ...gatewayv1.SecretObjectReference) gatewayv1.Listener {
		return gatewayv1.Listener{Name: gatewayv1.SectionName(name), Protocol: gatewayv1.HTTPSProtocolType, Port: 443, TLS: &gatewayv1.ListenerTLSConfig{CertificateRefs: refs}}
	}
	gw := &gatewayv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: "gw", Name: "edge"}, Spec: gatewayv1.GatewaySpec{
		Listeners: []gatewayv1.Listener{
			https("own", gatewayv1.SecretObjectReference{Name: "own-tls"}),
			https("granted", gatewayv1.SecretObjectReference{Name: "shared-tls", Namespace: ns("certs")}),
			https("not-granted", gatewayv1.SecretObjectReference{Name: "private-tls", Namespace: ns("certs")}),
			https("wrong-kind", gatewayv1.SecretObjectReference{Name: "cm", Kind: kind("ConfigMap")}),
		},
		AllowedListeners: &gatewayv1.AllowedListeners{Namespaces: &gatewayv1.ListenerNamespaces{From: ptr(gatewayv1.NamespacesFromSame)}},
	}}
	set := func(namespace, secret string) *gatewayv1.ListenerSet {
		return &gatewayv1.ListenerSet{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "set"}, Spec: gatewayv1.ListenerSetSpec{
			ParentRef: gatewayv1.ParentGatewayReference{Name: "edge", Namespace: ns("gw")},
			Listeners: []gatewayv1.ListenerEntry{{Name: "s", Protocol: gatewayv1.HTTPSProtocolType, Port: 8443, TLS: &gatewayv1.ListenerTLSConfig{CertificateRefs: []gatewayv1.SecretObjectReference{{Name: gatewayv1.ObjectName(secret)}}}}},
		}}
	}
	grant := &gatewayv1beta1.ReferenceGrant{ObjectMeta: metav1.ObjectMeta{Namespace: "certs", Name: "g"}, Spec: gatewayv1beta1.ReferenceGrantSpec{
		From: []gatewayv1beta1.ReferenceGrantFrom{{Group: gatewayv1.GroupName, Kind: "Gateway", Namespace: "gw"}},
		To:   []gatewayv1beta1.ReferenceGrantTo{{Kind: "Secret", Name: ptr(gatewayv1.ObjectName("shared-tls"))}},
	}}
	class := &networkingv1.IngressClass{ObjectMeta: metav1.ObjectMeta{Name: "isobar"}, Spec: networkingv1.IngressClassSpec{
		Controller: "isobar.dev/gateway-controller",
		Parameters: &networkingv1.IngressClassParametersReference{APIGroup: ptr(gatewayv1.GroupName), Kind: "Gateway", Name: "edge", Namespace: ptr("gw"), Scope: ptr(networkingv1.IngressClassParametersReferenceScopeNamespace)},
	}}
	ingress := func(namespace, class, secret string) *networkingv1.Ingress {
		return &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "ing"}, Spec: networkingv1.IngressSpec{
			IngressClassName: ptr(class), TLS: []networkingv1.IngressTLS{{SecretName: secret}}}}
	}
	policy := &gatewayv1.BackendTLSPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "p"}, Spec: gatewayv1.BackendTLSPolicySpec{
		Validation: gatewayv1.BackendTLSPolicyValidation{CACertificateRefs: []gatewayv1.LocalObjectReference{
			{Kind: "ConfigMap", Name: "backend-ca"}, {Group: "example.com", Kind: "Bundle", Name: "other"}}},
	}}
	proxy := func(namespace, secret string) *contourv1.HTTPProxy {
		return &contourv1.HTTPProxy{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: secret}, Spec: contourv1.HTTPProxySpec{
			IngressClassName: "isobar",
			VirtualHost:      &contourv1.VirtualHost{Fqdn: secret + ".example.com", TLS: &contourv1.TLS{SecretName: secret}},
		}}
	}
	fallback := proxy("shop", "fallback-tls")
	fallback.Spec.VirtualHost.TLS.EnableFallbackCertificate = true
	clients := proxy("shop", "clients-tls")
	clients.Spec.VirtualHost.TLS.ClientValidation = &contourv1.DownstreamValidation{CACertificate: "clients-ca", CertificateRevocationList: "clients-crl"}
	delegation := &contourv1.TLSCertificateDelegation{ObjectMeta: metav1.ObjectMeta{Namespace: "certs", Name: "d"}, Spec: contourv1.TLSCertificateDelegationSpec{
		Delegations: []contourv1.CertificateDelegation{{SecretName: "delegated-tls", TargetNamespaces: []string{"shop"}}, {SecretName: "ing-shared-tls", TargetNamespaces: []string{"apps"}}},
	}}
	got := Of(Input{
		HTTPProxies: []*contourv1.HTTPProxy{
			proxy("shop", "proxy-tls"),
			proxy("shop", "certs/delegated-tls"),
			proxy("blog", "certs/delegated-tls"), // delegated to shop only
			proxy("shop", "certs/other-tls"),     // not delegated
			clients,
			fallback,
			{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "validating"}, Spec: contourv1.HTTPProxySpec{IngressClassName: "isobar",
				Routes: []contourv1.Route{{Services: []contourv1.Service{{Name: "app", Port: 443, UpstreamValidation: &contourv1.UpstreamValidation{CACertificate: "backend-ca", SubjectName: "app"}}}}}}},
		},
		TLSCertificateDelegations: []*contourv1.TLSCertificateDelegation{delegation},
		FallbackCertificate:       &v1alpha1.SecretReference{Namespace: "shop", Name: "fallback-cert"},
		Gateway:                   gw, ControllerName: "isobar.dev/gateway-controller",
		ListenerSets: []*gatewayv1.ListenerSet{set("gw", "set-tls"), set("elsewhere", "foreign-set-tls")},
		// An Ingress's Secret of another namespace needs a delegation
		// there: certs delegates ing-shared-tls to apps, not delegated-tls.
		Ingresses: []*networkingv1.Ingress{ingress("apps", "isobar", "ing-tls"), ingress("apps2", "other", "other-tls"),
			ingress("apps", "isobar", "certs/ing-shared-tls"), ingress("apps", "isobar", "certs/delegated-tls")},
		IngressClasses:     []*networkingv1.IngressClass{class},
		ReferenceGrants:    []*gatewayv1beta1.ReferenceGrant{grant},
		BackendTLSPolicies: []*gatewayv1.BackendTLSPolicy{policy},
	})
	want := []Ref{
		{ConfigMap, "apps", "backend-ca"},
		{Secret, "apps", "ing-tls"},
		{Secret, "certs", "delegated-tls"},
		{Secret, "certs", "ing-shared-tls"},
		{Secret, "certs", "shared-tls"},
		{Secret, "gw", "own-tls"},
		{Secret, "gw", "set-tls"},
		{Secret, "shop", "backend-ca"},
		{Secret, "shop", "clients-ca"},
		{Secret, "shop", "clients-crl"},
		{Secret, "shop", "clients-tls"},
		{Secret, "shop", "fallback-cert"},
		{Secret, "shop", "fallback-tls"},
		{Secret, "shop", "proxy-tls"},
	}
	if !slices.Equal(got, want) {
		t.Errorf("Of:\n got %v\nwant %v", got, want)
	}
}

func ptr[T any](v T) *T { return &v }
