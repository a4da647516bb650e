// Package resources is the input of translation: a snapshot of the
// Kubernetes objects that can affect one or more Gateways. The live
// controller fills it from its informer caches, `isobar-controller translate`
// from YAML files; the translator sees no difference.
package resources

import (
	contourv1 "github.com/projectcontour/contour/apis/projectcontour/v1"
	contourv1alpha1 "github.com/projectcontour/contour/apis/projectcontour/v1alpha1"

	"isobar.dev/api/certrefs"
	"isobar.dev/api/v1alpha1"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	gatewayv1beta1 "sigs.k8s.io/gateway-api/apis/v1beta1"
	gatewayxv1alpha1 "sigs.k8s.io/gateway-api/apisx/v1alpha1"
)

// Resources holds pointers to objects the translator must treat as read-only:
// they may be shared with an informer cache.
type Resources struct {
	GatewayClasses     []*gatewayv1.GatewayClass
	Gateways           []*gatewayv1.Gateway
	HTTPRoutes         []*gatewayv1.HTTPRoute
	GRPCRoutes         []*gatewayv1.GRPCRoute
	TLSRoutes          []*gatewayv1.TLSRoute
	TCPRoutes          []*gatewayv1.TCPRoute
	UDPRoutes          []*gatewayv1.UDPRoute
	ListenerSets       []*gatewayv1.ListenerSet
	Ingresses          []*networkingv1.Ingress
	IngressClasses     []*networkingv1.IngressClass
	ReferenceGrants    []*gatewayv1beta1.ReferenceGrant
	BackendTLSPolicies []*gatewayv1.BackendTLSPolicy
	// BackendTrafficPolicies are the experimental channel's
	// XBackendTrafficPolicies.
	BackendTrafficPolicies []*gatewayxv1alpha1.XBackendTrafficPolicy
	// Backends are the experimental channel's XBackends, which routes
	// name as backends beside Services.
	Backends       []*gatewayxv1alpha1.XBackend
	Services       []*corev1.Service
	EndpointSlices []*discoveryv1.EndpointSlice
	Secrets        []*corev1.Secret
	ConfigMaps     []*corev1.ConfigMap
	Namespaces     []*corev1.Namespace
	// ContourDeployments are read by the offline tools only, for the
	// runtimeSettings of each Gateway's profile; the live controller gets
	// its Gateway's from the operator.
	ContourDeployments []*v1alpha1.ContourDeployment
	// HTTPProxies and TLSCertificateDelegations are Contour's
	// (projectcontour.io/v1), and so are the ExtensionServices
	// (v1alpha1) that HTTPProxies name as authorization servers.
	HTTPProxies               []*contourv1.HTTPProxy
	TLSCertificateDelegations []*contourv1.TLSCertificateDelegation
	ExtensionServices         []*contourv1alpha1.ExtensionService

	// Unserved lists the route kinds the cluster does not serve at the
	// version the controller reads (their CRD is not installed, or is too
	// old): listeners do not offer them. Offline, every kind is served.
	Unserved []gatewayv1.Kind

	// Namespace is where Load puts namespaced objects that name none, as
	// kubectl's --namespace; empty means "default".
	Namespace string

	// Replaced lists objects loaded twice: the later one replaced the
	// earlier, as a second kubectl apply would.
	Replaced []string
	// loaded indexes loaded objects by type, namespace and name.
	loaded map[string]int
}

// CertificateInput is what certrefs decides gw's references from, in r:
// the live controller and the offline tools read the same objects for it.
func (r *Resources) CertificateInput(gw *gatewayv1.Gateway, controllerName string, fallback *v1alpha1.SecretReference) certrefs.Input {
	return certrefs.Input{
		Gateway:                   gw,
		ControllerName:            controllerName,
		ListenerSets:              r.ListenerSets,
		Namespaces:                r.Namespaces,
		Ingresses:                 r.Ingresses,
		HTTPProxies:               r.HTTPProxies,
		TLSCertificateDelegations: r.TLSCertificateDelegations,
		ExtensionServices:         r.ExtensionServices,
		FallbackCertificate:       fallback,
		IngressClasses:            r.IngressClasses,
		ReferenceGrants:           r.ReferenceGrants,
		BackendTLSPolicies:        r.BackendTLSPolicies,
		Backends:                  r.Backends,
	}
}
