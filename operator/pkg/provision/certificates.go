package provision

import (
	"context"
	"fmt"

	contourv1 "github.com/projectcontour/contour/apis/projectcontour/v1"
	contourv1alpha1 "github.com/projectcontour/contour/apis/projectcontour/v1alpha1"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	gatewayv1beta1 "sigs.k8s.io/gateway-api/apis/v1beta1"
	gatewayxv1alpha1 "sigs.k8s.io/gateway-api/apisx/v1alpha1"

	"isobar.dev/api/certrefs"
	"isobar.dev/api/served"
	"isobar.dev/api/v1alpha1"
)

// Optional kinds whose objects name certificates: a cluster may not serve
// them, and then holds none.
var (
	ListenerSetKind      = schema.FromAPIVersionAndKind(gatewayv1.GroupVersion.String(), "ListenerSet")
	ReferenceGrantKind   = schema.FromAPIVersionAndKind(gatewayv1beta1.GroupVersion.String(), "ReferenceGrant")
	BackendTLSPolicyKind = schema.FromAPIVersionAndKind(gatewayv1.GroupVersion.String(), "BackendTLSPolicy")
	HTTPProxyKind        = contourv1.SchemeGroupVersion.WithKind("HTTPProxy")
	DelegationKind       = contourv1.SchemeGroupVersion.WithKind("TLSCertificateDelegation")
	ExtensionServiceKind = contourv1alpha1.GroupVersion.WithKind("ExtensionService")
	XBackendKind         = schema.FromAPIVersionAndKind(gatewayxv1alpha1.GroupVersion.String(), "XBackend")
	OptionalKinds        = []schema.GroupVersionKind{ListenerSetKind, ReferenceGrantKind, BackendTLSPolicyKind, HTTPProxyKind, DelegationKind, ExtensionServiceKind, XBackendKind}
)

// CertificateRefs reads what certrefs decides from and returns the Secrets
// and ConfigMaps the controller serving gw (of a class with
// controllerName, and a profile with runtime settings rs) may read.
func CertificateRefs(ctx context.Context, c client.Reader, gw *gatewayv1.Gateway, controllerName string, rs v1alpha1.RuntimeSettings, have served.Set) ([]certrefs.Ref, error) {
	in := certrefs.Input{Gateway: gw, ControllerName: controllerName}
	if hp := rs.HTTPProxy; hp != nil {
		in.FallbackCertificate = hp.FallbackCertificate
	}
	var namespaces corev1.NamespaceList
	var ingresses networkingv1.IngressList
	var classes networkingv1.IngressClassList
	var sets gatewayv1.ListenerSetList
	var grants gatewayv1beta1.ReferenceGrantList
	var policies gatewayv1.BackendTLSPolicyList
	var proxies contourv1.HTTPProxyList
	var delegations contourv1.TLSCertificateDelegationList
	var extensions contourv1alpha1.ExtensionServiceList
	var backends gatewayxv1alpha1.XBackendList
	lists := []struct {
		list client.ObjectList
		kind schema.GroupVersionKind
	}{
		{&ingresses, schema.GroupVersionKind{}}, {&classes, schema.GroupVersionKind{}},
		{&sets, ListenerSetKind}, {&grants, ReferenceGrantKind}, {&policies, BackendTLSPolicyKind}, {&proxies, HTTPProxyKind},
		{&delegations, DelegationKind}, {&extensions, ExtensionServiceKind}, {&backends, XBackendKind},
	}
	for _, l := range lists {
		if !l.kind.Empty() && !have[l.kind] {
			continue
		}
		if err := c.List(ctx, l.list); err != nil {
			return nil, fmt.Errorf("listing %T: %w", l.list, err)
		}
	}
	if len(sets.Items) > 0 {
		if err := c.List(ctx, &namespaces); err != nil {
			return nil, fmt.Errorf("listing namespaces: %w", err)
		}
	}
	in.Namespaces = pointers(namespaces.Items)
	in.Ingresses = pointers(ingresses.Items)
	in.IngressClasses = pointers(classes.Items)
	in.ListenerSets = pointers(sets.Items)
	in.ReferenceGrants = pointers(grants.Items)
	in.BackendTLSPolicies = pointers(policies.Items)
	in.HTTPProxies = pointers(proxies.Items)
	in.TLSCertificateDelegations = pointers(delegations.Items)
	in.ExtensionServices = pointers(extensions.Items)
	in.Backends = pointers(backends.Items)
	return certrefs.Of(in), nil
}

func pointers[T any](items []T) []*T {
	out := make([]*T, len(items))
	for i := range items {
		out[i] = &items[i]
	}
	return out
}

// CertificateSources are the kinds whose changes can change a Gateway's
// certificate references, of those the cluster serves (ListenerSets are
// watched for their ports already).
func CertificateSources(have served.Set) []client.Object {
	out := []client.Object{&networkingv1.Ingress{}, &networkingv1.IngressClass{}}
	if have[ReferenceGrantKind] {
		out = append(out, &gatewayv1beta1.ReferenceGrant{})
	}
	if have[BackendTLSPolicyKind] {
		out = append(out, &gatewayv1.BackendTLSPolicy{})
	}
	if have[HTTPProxyKind] {
		out = append(out, &contourv1.HTTPProxy{})
	}
	if have[DelegationKind] {
		out = append(out, &contourv1.TLSCertificateDelegation{})
	}
	if have[ExtensionServiceKind] {
		out = append(out, &contourv1alpha1.ExtensionService{})
	}
	if have[XBackendKind] {
		out = append(out, &gatewayxv1alpha1.XBackend{})
	}
	return out
}

// CertificateSourceChanged passes the changes of a certificate source that
// can change references: its spec (generation), or an IngressClass's
// default-class annotation, not the status the controllers write.
var CertificateSourceChanged = predicate.Or(predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{})
