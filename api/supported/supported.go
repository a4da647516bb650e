// Package supported is what an Isobar GatewayClass claims and reports:
// the features the translator implements, which of them depend on fields
// or kinds an installed CRD may lack, and the class's status. The operator
// writes class status from it; the controller in controllerName mode, and
// the offline commands, too; the docs are generated from it.
package supported

import (
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	"sigs.k8s.io/gateway-api/pkg/features"
)

// Features are the Gateway API features the translator implements, as a
// GatewayClass reports them. The conformance suite checks the claim.
var Features = sortedFeatures(
	features.SupportGateway,
	features.SupportGatewayPort8080,
	features.SupportGatewayHTTPListenerIsolation,
	features.SupportGatewayHTTPSListenerDetectMisdirectedRequests,
	features.SupportGatewayInfrastructure,
	features.SupportListenerSet,
	features.SupportGatewayAddressEmpty,
	features.SupportGatewayStaticAddresses,
	features.SupportGatewayBackendClientCertificate,
	features.SupportGatewayFrontendClientCertificateValidation,
	features.SupportGatewayFrontendClientCertificateValidationInsecureFallback,
	features.SupportReferenceGrant,
	features.SupportHTTPRoute,
	features.SupportHTTPRouteQueryParamMatching,
	features.SupportHTTPRouteMethodMatching,
	features.SupportHTTPRouteResponseHeaderModification,
	features.SupportHTTPRouteBackendRequestHeaderModification,
	features.SupportHTTPRoutePortRedirect,
	features.SupportHTTPRouteSchemeRedirect,
	features.SupportHTTPRoutePathRedirect,
	features.SupportHTTPRouteHostRewrite,
	features.SupportHTTPRoutePathRewrite,
	features.SupportHTTPRouteRequestMirror,
	features.SupportHTTPRouteRequestMultipleMirrors,
	features.SupportHTTPRouteRequestPercentageMirror,
	features.SupportHTTPRouteRequestTimeout,
	features.SupportHTTPRouteBackendTimeout,
	features.SupportHTTPRouteParentRefPort,
	features.SupportHTTPRouteBackendProtocolH2C,
	features.SupportHTTPRouteBackendProtocolWebSocket,
	features.SupportHTTPRouteCORS,
	features.SupportHTTPRoute303RedirectStatusCode,
	features.SupportHTTPRoute307RedirectStatusCode,
	features.SupportHTTPRoute308RedirectStatusCode,
	features.SupportHTTPRouteRetry,
	features.SupportHTTPRouteRetryBackendTimeout,
	features.SupportHTTPRouteRetryConnectionError,
	features.SupportHTTPRouteDestinationPortMatching,
	features.SupportHTTPRouteNamedRouteRule,
	features.SupportGRPCRouteNamedRouteRule,
	features.SupportGRPCRoute,
	features.SupportTLSRoute,
	features.SupportTLSRouteModeTerminate,
	features.SupportTLSRouteModeMixed,
	features.SupportTCPRoute,
	features.SupportUDPRoute,
	features.SupportBackendTLSPolicy,
	features.SupportBackendTLSPolicySANValidation,
)

// Field is a field of a Gateway API kind, as its CRD's schema names it.
type Field struct {
	CRD string
	// Path is the properties from the schema's root; arrays are walked
	// through.
	Path []string
}

// Requires are the claimed features whose field only some channels' CRDs
// serve (v1.6's standard channel prunes HTTPRoute rules' retry), or whose
// kind a cluster may not have installed (ListenerSet). A field the
// API server drops cannot work, so a class claims such a feature only
// where the installed CRD has the field.
var Requires = map[gatewayv1.FeatureName]Field{
	gatewayv1.FeatureName(features.SupportHTTPRouteRetry):                {CRD: "httproutes.gateway.networking.k8s.io", Path: []string{"spec", "rules", "retry"}},
	gatewayv1.FeatureName(features.SupportHTTPRouteRetryBackendTimeout):  {CRD: "httproutes.gateway.networking.k8s.io", Path: []string{"spec", "rules", "retry"}},
	gatewayv1.FeatureName(features.SupportHTTPRouteRetryConnectionError): {CRD: "httproutes.gateway.networking.k8s.io", Path: []string{"spec", "rules", "retry"}},
	gatewayv1.FeatureName(features.SupportListenerSet):                   {CRD: "listenersets.gateway.networking.k8s.io", Path: []string{"spec", "listeners"}},
}

// Claimed are the supported features a class claims where served says
// which fields the installed CRDs have.
func Claimed(served func(Field) bool) []gatewayv1.SupportedFeature {
	var out []gatewayv1.SupportedFeature
	for _, f := range Features {
		if field, ok := Requires[f.Name]; !ok || served(field) {
			out = append(out, f)
		}
	}
	return out
}

func sortedFeatures(names ...features.FeatureName) []gatewayv1.SupportedFeature {
	out := make([]gatewayv1.SupportedFeature, len(names))
	for i, n := range names {
		out[i] = gatewayv1.SupportedFeature{Name: gatewayv1.FeatureName(n)}
	}
	slices.SortFunc(out, func(a, b gatewayv1.SupportedFeature) int {
		switch {
		case a.Name < b.Name:
			return -1
		case a.Name > b.Name:
			return 1
		}
		return 0
	})
	return out
}

// ClassStatus is a GatewayClass's status: Accepted, or not with reason
// InvalidParameters and paramsErr's message, and the features it claims.
func ClassStatus(class *gatewayv1.GatewayClass, paramsErr error, claimed []gatewayv1.SupportedFeature) gatewayv1.GatewayClassStatus {
	accepted := metav1.Condition{
		Type: string(gatewayv1.GatewayClassConditionStatusAccepted), Status: metav1.ConditionTrue,
		Reason: string(gatewayv1.GatewayClassReasonAccepted), Message: "GatewayClass is accepted", ObservedGeneration: class.Generation,
	}
	if paramsErr != nil {
		accepted.Status, accepted.Reason, accepted.Message = metav1.ConditionFalse, string(gatewayv1.GatewayClassReasonInvalidParameters), paramsErr.Error()
	}
	return gatewayv1.GatewayClassStatus{Conditions: []metav1.Condition{accepted}, SupportedFeatures: slices.Clone(claimed)}
}
