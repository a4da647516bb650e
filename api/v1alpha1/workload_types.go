package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
)

// WorkloadSettings are the pod-level settings the control plane and Envoy
// share.
// +kubebuilder:validation:XValidation:rule="!has(self.podLabels) || !self.podLabels.exists(k, k in ['app.kubernetes.io/managed-by', 'app.kubernetes.io/component', 'gateway.networking.k8s.io/gateway-name'])",message="podLabels may not set app.kubernetes.io/managed-by, app.kubernetes.io/component or gateway.networking.k8s.io/gateway-name: the operator selects the fleet's pods by them"
type WorkloadSettings struct {
	// Image overrides the container image the operator was started with.
	// Pin it by digest in production.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:Pattern=`^\S+$`
	// +optional
	Image string `json:"image,omitempty"`

	// Resources are the container's compute requests and limits. A
	// request above its limit is refused here for CPU and memory, by the
	// API server's dry run of the fleet for other resources.
	// +kubebuilder:validation:XValidation:rule="!has(self.requests) || !has(self.limits) || !('memory' in self.requests) || !('memory' in self.limits) || quantity(string(self.requests['memory'])).compareTo(quantity(string(self.limits['memory']))) <= 0",message="requests.memory must be at most limits.memory"
	// +kubebuilder:validation:XValidation:rule="!has(self.requests) || !has(self.limits) || !('cpu' in self.requests) || !('cpu' in self.limits) || quantity(string(self.requests['cpu'])).compareTo(quantity(string(self.limits['cpu']))) <= 0",message="requests.cpu must be at most limits.cpu"
	// +optional
	Resources *Resources `json:"resources,omitempty"`

	// NodePlacement constrains which nodes the pods run on.
	// +optional
	NodePlacement *NodePlacement `json:"nodePlacement,omitempty"`

	// PodAnnotations are added to the pods, for example for a service mesh
	// or a log collector. Keys must be qualified names; the schema cannot
	// check map keys within the API server's validation cost budget, so
	// the operator's dry run of the fleet reports a bad one in the
	// profile's Accepted condition.
	// +kubebuilder:validation:MaxProperties=64
	// +optional
	PodAnnotations map[string]string `json:"podAnnotations,omitempty"`

	// PodLabels are added to the pods. They may not replace the labels the
	// operator selects the pods by. Keys are checked as podAnnotations'.
	// +kubebuilder:validation:MaxProperties=64
	// +optional
	PodLabels map[string]LabelValue `json:"podLabels,omitempty"`

	// PriorityClassName is the pods' PriorityClass. Give Envoy a high one:
	// evicting it drops traffic.
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	// +optional
	PriorityClassName string `json:"priorityClassName,omitempty"`

	// ImagePullSecrets name Secrets in the Gateway's namespace used to pull
	// the image.
	// +kubebuilder:validation:MaxItems=16
	// +listType=atomic
	// +optional
	ImagePullSecrets []corev1.LocalObjectReference `json:"imagePullSecrets,omitempty"`
}

// NodePlacement constrains scheduling; each field is passed to the pod spec
// as it is.
type NodePlacement struct {
	// NodeSelector must match a node's labels for a pod to run there.
	// +kubebuilder:validation:MaxProperties=32
	// +optional
	NodeSelector map[string]LabelValue `json:"nodeSelector,omitempty"`

	// Tolerations let the pods run on tainted nodes.
	// +kubebuilder:validation:MaxItems=32
	// +listType=atomic
	// +optional
	Tolerations []corev1.Toleration `json:"tolerations,omitempty"`

	// Affinity holds node and pod (anti-)affinity rules.
	// +optional
	Affinity *corev1.Affinity `json:"affinity,omitempty"`

	// TopologySpreadConstraints spread the pods across zones or nodes.
	// +kubebuilder:validation:MaxItems=8
	// +listType=atomic
	// +optional
	TopologySpreadConstraints []corev1.TopologySpreadConstraint `json:"topologySpreadConstraints,omitempty"`
}

// ControllerSettings configure the per-Gateway control plane Deployment.
type ControllerSettings struct {
	// Replicas of the control plane. Every replica serves xDS, so Envoy
	// reconnects to another when one goes away; one leader writes status.
	// +kubebuilder:default=2
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=16
	// +optional
	Replicas *int32 `json:"replicas,omitempty"`

	// LogLevel of isobar-controller.
	// +kubebuilder:default=info
	// +optional
	LogLevel ControllerLogLevel `json:"logLevel,omitempty"`

	WorkloadSettings `json:",inline"`
}

// ControllerLogLevel is the least severe level isobar-controller logs.
// +kubebuilder:validation:Enum=debug;info;warn;error
type ControllerLogLevel string

const (
	ControllerLogDebug ControllerLogLevel = "debug"
	ControllerLogInfo  ControllerLogLevel = "info"
	ControllerLogWarn  ControllerLogLevel = "warn"
	ControllerLogError ControllerLogLevel = "error"
)

// LabelValue is a Kubernetes label value.
// +kubebuilder:validation:MaxLength=63
// +kubebuilder:validation:Pattern=`^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$`
type LabelValue string

// Resources are a container's compute requests and limits: the parts of
// corev1.ResourceRequirements a fleet's pods can use (they declare no
// resource claims).
type Resources struct {
	// Limits are the most the container may use.
	// +optional
	Limits corev1.ResourceList `json:"limits,omitempty"`
	// Requests are what the scheduler reserves for the container.
	// +optional
	Requests corev1.ResourceList `json:"requests,omitempty"`
}

// Requirements are the container's corev1 resource requirements.
func (r *Resources) Requirements() corev1.ResourceRequirements {
	if r == nil {
		return corev1.ResourceRequirements{}
	}
	return corev1.ResourceRequirements{Limits: r.Limits, Requests: r.Requests}
}
