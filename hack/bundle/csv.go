package main

import (
	"github.com/blang/semver/v4"
	"github.com/operator-framework/api/pkg/lib/version"
	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const description = `Isobar is a Kubernetes Gateway API implementation with Envoy as its data plane.

The operator provisions a fleet for every Gateway of a GatewayClass whose controllerName is
isobar.dev/gateway-controller: a per-Gateway control plane that translates the Gateway and its
routes into Envoy configuration and serves it over mutual-TLS xDS, an Envoy DaemonSet or
Deployment, their Services, certificates and least-privilege RBAC. A ContourDeployment
profile, referenced from the GatewayClass's parametersRef or a Gateway's
infrastructure.parametersRef, configures the fleet.

Prerequisite: the Gateway API CRDs (v1.6, standard or experimental channel).`

// baseCSV is the ClusterServiceVersion without what comes from config/.
func baseCSV(v semver.Version, replaces string) *operatorsv1alpha1.ClusterServiceVersion {
	return &operatorsv1alpha1.ClusterServiceVersion{
		TypeMeta: metav1.TypeMeta{APIVersion: "operators.coreos.com/v1alpha1", Kind: "ClusterServiceVersion"},
		ObjectMeta: metav1.ObjectMeta{
			Name: "isobar-operator.v" + v.String(),
			Annotations: map[string]string{
				"capabilities":                           "Basic Install",
				"categories":                             "Networking",
				"description":                            "Gateway API implementation with Envoy: a provisioned, per-Gateway fleet",
				"repository":                             "https://github.com/isobar-dev/isobar",
				"support":                                "Isobar",
				"createdAt":                              "2026-11-22T00:00:00Z",
				"operators.operatorframework.io/builder": "isobar hack/bundle",
			},
		},
		Spec: operatorsv1alpha1.ClusterServiceVersionSpec{
			DisplayName:    "Isobar",
			Description:    description,
			Version:        version.OperatorVersion{Version: v},
			Replaces:       replaces,
			Maturity:       "alpha",
			MinKubeVersion: "1.30.0",
			Keywords:       []string{"gateway-api", "envoy", "ingress", "load balancer", "networking"},
			Provider:       operatorsv1alpha1.AppLink{Name: "Isobar", URL: "https://github.com/isobar-dev/isobar"},
			Maintainers:    []operatorsv1alpha1.Maintainer{{Name: "Isobar maintainers", Email: "maintainers@isobar.dev"}},
			Links: []operatorsv1alpha1.AppLink{
				{Name: "Source", URL: "https://github.com/isobar-dev/isobar"},
				{Name: "Gateway API", URL: "https://gateway-api.sigs.k8s.io"},
			},
			Icon: []operatorsv1alpha1.Icon{{MediaType: "image/svg+xml", Data: icon}},
			InstallModes: []operatorsv1alpha1.InstallMode{
				{Type: operatorsv1alpha1.InstallModeTypeOwnNamespace, Supported: false},
				{Type: operatorsv1alpha1.InstallModeTypeSingleNamespace, Supported: false},
				{Type: operatorsv1alpha1.InstallModeTypeMultiNamespace, Supported: false},
				// Gateways live in every namespace.
				{Type: operatorsv1alpha1.InstallModeTypeAllNamespaces, Supported: true},
			},
			InstallStrategy: operatorsv1alpha1.NamedInstallStrategy{StrategyName: operatorsv1alpha1.InstallStrategyNameDeployment},
		},
	}
}

// owned describes a CRD the bundle owns, with descriptors for the fields
// a console shows.
func owned(crd *apiextensionsv1.CustomResourceDefinition) operatorsv1alpha1.CRDDescription {
	d := operatorsv1alpha1.CRDDescription{Name: crd.Name, Kind: crd.Spec.Names.Kind}
	for _, v := range crd.Spec.Versions {
		if v.Storage {
			d.Version = v.Name
		}
	}
	switch d.Kind {
	case "HTTPProxy":
		d.DisplayName = "HTTP Proxy"
		d.Description = "Contour's routing API: a virtual host and the proxies it includes, served by the Gateways of its IngressClass."
		return d
	case "TLSCertificateDelegation":
		d.DisplayName = "TLS Certificate Delegation"
		d.Description = "Contour's grant letting HTTPProxies of other namespaces use a namespace's TLS Secrets."
		return d
	case "ExtensionService":
		d.DisplayName = "Extension Service"
		d.Description = "Contour's gRPC service that HTTPProxies name as their external authorization server."
		return d
	}
	d.DisplayName = "Contour Deployment"
	d.Description = "A profile for the fleets the operator provisions: the controller, Envoy and runtime settings."
	d.SpecDescriptors = []operatorsv1alpha1.SpecDescriptor{
		{Path: "envoy.workloadType", DisplayName: "Envoy workload", Description: "DaemonSet or Deployment", XDescriptors: []string{"urn:alm:descriptor:com.tectonic.ui:select:DaemonSet", "urn:alm:descriptor:com.tectonic.ui:select:Deployment"}},
		{Path: "envoy.replicas", DisplayName: "Envoy replicas", Description: "Replicas of an Envoy Deployment", XDescriptors: []string{"urn:alm:descriptor:com.tectonic.ui:podCount"}},
		{Path: "controller.replicas", DisplayName: "Controller replicas", Description: "Replicas of each Gateway's controller", XDescriptors: []string{"urn:alm:descriptor:com.tectonic.ui:podCount"}},
		{Path: "envoy.networkPublishing.type", DisplayName: "Envoy Service type", Description: "How the Envoy Service is published", XDescriptors: []string{"urn:alm:descriptor:com.tectonic.ui:text"}},
	}
	d.StatusDescriptors = []operatorsv1alpha1.StatusDescriptor{
		{Path: "conditions", DisplayName: "Conditions", Description: "Whether fleets can be rendered from the profile", XDescriptors: []string{"urn:alm:descriptor:io.kubernetes.conditions"}},
		{Path: "gatewayCount", DisplayName: "Gateways", Description: "How many Gateways use the profile", XDescriptors: []string{"urn:alm:descriptor:text"}},
	}
	return d
}

// icon is a plain isobar mark.
const icon = "PHN2ZyB4bWxucz0iaHR0cDovL3d3dy53My5vcmcvMjAwMC9zdmciIHZpZXdCb3g9IjAgMCA2NCA2NCI+PGNpcmNsZSBjeD0iMzIiIGN5PSIzMiIgcj0iMzAiIGZpbGw9IiMxZDRlZDgiLz48cGF0aCBkPSJNMTAgMzJjOC0xMiAzNi0xMiA0NCAwTTE0IDQyYzYtOCAzMC04IDM2IDBNMTQgMjJjNi04IDMwLTggMzYgMCIgc3Ryb2tlPSIjZmZmIiBzdHJva2Utd2lkdGg9IjMiIGZpbGw9Im5vbmUiLz48L3N2Zz4="
