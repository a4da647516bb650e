// Package v1alpha1 holds the isobar.dev/v1alpha1 API: the ContourDeployment,
// the configuration profile that a GatewayClass's parametersRef (or a Gateway's
// spec.infrastructure.parametersRef) points at, and from which the operator
// renders each Gateway's fleet.
//
// +kubebuilder:object:generate=true
// +groupName=isobar.dev
package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupVersion is the API group and version of everything in this package.
var GroupVersion = schema.GroupVersion{Group: "isobar.dev", Version: "v1alpha1"}

var (
	// SchemeBuilder registers this package's types; AddToScheme applies it.
	// It is the apimachinery builder rather than controller-runtime's so that
	// importing the API does not pull in a controller framework.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)
	AddToScheme   = SchemeBuilder.AddToScheme
)

func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(GroupVersion, &ContourDeployment{}, &ContourDeploymentList{})
	metav1.AddToGroupVersion(scheme, GroupVersion)
	return nil
}
