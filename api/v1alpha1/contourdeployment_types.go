package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ContourDeployment is a configuration profile for Gateway fleets: how the
// per-Gateway control plane and its Envoy proxies are deployed and published,
// and how the control plane translates and serves configuration. A
// GatewayClass points at one through spec.parametersRef, and a Gateway may
// point at another through spec.infrastructure.parametersRef, merged over the
// class's. An empty spec is a complete, working profile.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=cdep,categories=isobar
// +kubebuilder:printcolumn:name="Envoy",type=string,JSONPath=`.spec.envoy.workloadType`,description="How Envoy runs: DaemonSet or Deployment"
// +kubebuilder:printcolumn:name="Publishing",type=string,JSONPath=`.spec.envoy.networkPublishing.type`,description="The kind of Service that exposes Envoy"
// +kubebuilder:printcolumn:name="Accepted",type=string,JSONPath=`.status.conditions[?(@.type=="Accepted")].status`
// +kubebuilder:printcolumn:name="Gateways",type=integer,JSONPath=`.status.gatewayCount`,description="How many Gateways use this profile"
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ContourDeployment struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the profile. Every field is optional and defaulted by the API
	// server, so `spec: {}` describes a working fleet.
	// +kubebuilder:default={}
	// +optional
	Spec ContourDeploymentSpec `json:"spec,omitempty"`

	// Status is written by isobar-operator.
	// +optional
	Status ContourDeploymentStatus `json:"status,omitempty"`
}

// ContourDeploymentSpec configures the three parts of a fleet.
type ContourDeploymentSpec struct {
	// Controller configures the per-Gateway control plane Deployment
	// (isobar-controller serve).
	// +kubebuilder:default={}
	// +optional
	Controller ControllerSettings `json:"controller,omitempty"`

	// Envoy configures the data plane: its workload, pods and Service.
	// +kubebuilder:default={}
	// +optional
	Envoy EnvoySettings `json:"envoy,omitempty"`

	// RuntimeSettings configures how the per-Gateway controller translates
	// Gateway API resources and serves them to Envoy. Changing it never
	// restarts Envoy pods.
	// +kubebuilder:default={}
	// +optional
	RuntimeSettings RuntimeSettings `json:"runtimeSettings,omitempty"`

	// Rollout configures how fleets take a new release of the controller
	// or Envoy image (an operator upgrade or rollback, a changed image):
	// each fleet's controller first, its Envoys once the new controller is
	// Ready, and a bounded number of fleets at once.
	// +kubebuilder:default={}
	// +optional
	Rollout RolloutSettings `json:"rollout,omitempty"`

	// Gateway, when set, makes this profile a static fleet: instead of
	// one fleet per Gateway, the operator runs one fleet, named after this
	// ContourDeployment, whose controller serves the oldest Gateway of the
	// oldest GatewayClass whose controllerName is Gateway.ControllerName
	// (and tells the other classes and Gateways why not). For a cluster
	// that wants one long-lived fleet it manages like a Deployment. A
	// GatewayClass should not refer to such a profile.
	// +optional
	Gateway *StaticGateway `json:"gateway,omitempty"`
}

// RolloutSettings bounds how many fleets take new images at once.
type RolloutSettings struct {
	// MaxFleets is how many fleets of one GatewayClass roll to new images
	// at once; the others keep their images until one of those has
	// finished (its controller and its Envoys all Ready on the new
	// images). A Gateway with its own parametersRef counts in its class's
	// pool with the limit its merged profile gives.
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000
	// +optional
	MaxFleets int32 `json:"maxFleets,omitempty"`
}

// StaticGateway configures a static fleet.
type StaticGateway struct {
	// ControllerName is the GatewayClass controllerName the static fleet
	// serves. It must differ from the operator's own, whose classes the
	// operator provisions per Gateway.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/[A-Za-z0-9\/\-._~%!$&'()*+,;=:]+$`
	ControllerName string `json:"controllerName"`
}

// ContourDeploymentStatus reports whether the profile is usable and who uses it.
type ContourDeploymentStatus struct {
	// ObservedGeneration is the metadata.generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions: Accepted is true when the operator can render fleets from
	// this profile, false with reason Invalid and a message otherwise.
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=8
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// GatewayClasses are the names of the GatewayClasses whose parametersRef
	// points at this profile.
	// +listType=set
	// +kubebuilder:validation:MaxItems=64
	// +optional
	GatewayClasses []string `json:"gatewayClasses,omitempty"`

	// Gateways are the Gateways whose fleets are rendered from this profile,
	// through their class or their own infrastructure.parametersRef. The
	// list is capped; GatewayCount is always the full count.
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=256
	// +optional
	Gateways []GatewayReference `json:"gateways,omitempty"`

	// GatewayCount is how many Gateways use this profile.
	// +optional
	GatewayCount int32 `json:"gatewayCount,omitempty"`
}

// GatewayReference names a Gateway.
type GatewayReference struct {
	// +kubebuilder:validation:MaxLength=63
	Namespace string `json:"namespace"`
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
}

// Condition types and reasons of a ContourDeployment's status.
const (
	// ConditionAccepted says whether fleets can be rendered from the profile.
	ConditionAccepted = "Accepted"

	// ReasonAccepted: the profile is valid and in use or ready to be used.
	ReasonAccepted = "Accepted"
	// ReasonInvalid: the API server admitted the profile, but the operator
	// cannot render it (for example an extra volume mount collides with a
	// mount the fleet needs); the message says which field and why.
	ReasonInvalid = "Invalid"

	// ConditionProvisioned on a static ContourDeployment (one no
	// GatewayClass names) says whether its fleet is provisioned; reason
	// ReasonProvisioned, or ReasonInvalid with why not.
	ConditionProvisioned = "Provisioned"
	// ReasonProvisioned: the fleet is applied.
	ReasonProvisioned = "Provisioned"

	// Reasons of Provisioned false while a fleet takes new images: it
	// waits for another fleet of its pool to finish (ReasonRolloutQueued),
	// its controller or its Envoys roll (ReasonRollingOut), or its new
	// controller missed its Deployment's progress deadline
	// (ReasonControllerNotReady); the Envoys keep their images until the
	// controller is Ready.
	ReasonRolloutQueued      = "RolloutQueued"
	ReasonRollingOut         = "RollingOut"
	ReasonControllerNotReady = "ControllerNotReady"
)

// GatewayConditionProvisioned is the one Gateway condition the operator
// writes: whether the Gateway's fleet is provisioned (reason
// ReasonProvisioned), or why not (the Gateway API's InvalidParameters).
// The controller writes every other Gateway condition.
const GatewayConditionProvisioned = "isobar.dev/" + ConditionProvisioned

// ContourDeploymentList is a list of ContourDeployments.
//
// +kubebuilder:object:root=true
type ContourDeploymentList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ContourDeployment `json:"items"`
}
