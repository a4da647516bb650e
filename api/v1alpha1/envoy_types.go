package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// ReservedMountPrefix is where the operator mounts Envoy's bootstrap and xDS
// certificates; extra volume mounts may not go below it.
const ReservedMountPrefix = "/var/run/isobar"

// EnvoySettings configure the data plane.
// +kubebuilder:validation:XValidation:rule="!has(self.replicas) || self.workloadType == 'Deployment'",message="replicas may only be set when workloadType is Deployment: a DaemonSet runs one Envoy per node"
// +kubebuilder:validation:XValidation:rule="!has(self.overloadMaxHeapSize) || !has(self.resources) || !has(self.resources.limits) || !('memory' in self.resources.limits) || quantity(string(self.overloadMaxHeapSize)).isLessThan(quantity(string(self.resources.limits['memory'])))",message="overloadMaxHeapSize must be below resources.limits.memory: Envoy is killed at the limit before the overload manager acts"
// +kubebuilder:validation:XValidation:rule="!has(self.extraVolumeMounts) || self.extraVolumeMounts.all(m, has(self.extraVolumes) && self.extraVolumes.exists(v, v.name == m.name))",message="every extraVolumeMounts[].name must name one of extraVolumes"
type EnvoySettings struct {
	// WorkloadType is how Envoy runs: a DaemonSet, one Envoy per node, or a
	// Deployment with a fixed number of replicas.
	// +kubebuilder:default=DaemonSet
	// +optional
	WorkloadType WorkloadType `json:"workloadType,omitempty"`

	// Replicas of a Deployment; only with workloadType Deployment. Unset,
	// the operator runs 2.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1000
	// +optional
	Replicas *int32 `json:"replicas,omitempty"`

	// LogLevel of Envoy.
	// +kubebuilder:default=info
	// +optional
	LogLevel EnvoyLogLevel `json:"logLevel,omitempty"`

	// BaseID is Envoy's --base-id, which keeps the shared memory of two
	// Envoys on one host (hostNetwork) apart.
	// +kubebuilder:validation:Minimum=0
	// +optional
	BaseID *int32 `json:"baseID,omitempty"`

	// OverloadMaxHeapSize turns on Envoy's overload manager: above 95% of
	// this heap size Envoy shrinks its heap, above 98% it stops accepting
	// requests rather than being killed for running out of memory. Set it
	// below the container's memory limit.
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:XValidation:rule="quantity(string(self)).isGreaterThan(quantity('0'))",message="overloadMaxHeapSize must be greater than zero"
	// +optional
	OverloadMaxHeapSize *resource.Quantity `json:"overloadMaxHeapSize,omitempty"`

	// OverloadMaxDownstreamConnections is how many client connections each
	// Envoy holds at once over all its listeners, Contour's setting of
	// that name: Envoy's overload manager refuses the ones beyond it. The
	// probes' and metrics' listeners are not counted nor refused.
	// +kubebuilder:validation:Minimum=1
	// +optional
	OverloadMaxDownstreamConnections *int64 `json:"overloadMaxDownstreamConnections,omitempty"`

	// MaxRequestsPerIOCycle bounds how many requests of its connections'
	// streams Envoy processes in one iteration of its event loop (Envoy's
	// runtime key http.max_requests_per_io_cycle, Contour's
	// envoy.listener.maxRequestsPerIOCycle): a mitigation of HTTP/2 rapid
	// reset floods. Envoy reads it when it starts, so a change rolls the
	// fleet.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=4294967295
	// +optional
	MaxRequestsPerIOCycle *int64 `json:"maxRequestsPerIOCycle,omitempty"`

	// OMEnforcedHealth, when true, opens a second readiness endpoint,
	// /ready on container port 8005 (Contour's envoy.omEnforcedHealth),
	// that counts against overloadMaxDownstreamConnections: when Envoy
	// holds that many client connections it refuses the health check's
	// too, so a load balancer that checks this port takes an Envoy at its
	// limit out of rotation. The stats port's /ready, which the kubelet
	// probes, stays exempt, so the Pod stays Ready. Envoy reads it when it
	// starts, so a change rolls the fleet.
	// +optional
	OMEnforcedHealth *bool `json:"omEnforcedHealth,omitempty"`

	// Runtime overrides Envoy runtime keys (its static runtime layer, as
	// Contour's envoy runtimeSettings): a key's value is read as Envoy
	// reads runtime strings, a number, a percentage or true/false. Keys
	// the profile sets elsewhere (http.max_requests_per_io_cycle) are
	// refused. Envoy reads them when it starts, so a change rolls the
	// fleet.
	// +kubebuilder:validation:MaxProperties=64
	// +kubebuilder:validation:XValidation:rule="self.all(k, k.matches('^[A-Za-z0-9_][A-Za-z0-9_.-]*$') && size(k) <= 256 && size(self[k]) <= 256)",message="runtime keys are dotted names of at most 256 characters, values at most 256"
	// +kubebuilder:validation:XValidation:rule="!('http.max_requests_per_io_cycle' in self)",message="set http.max_requests_per_io_cycle with maxRequestsPerIOCycle"
	// +optional
	Runtime map[string]string `json:"runtime,omitempty"`

	// ExtraVolumes are added to the Envoy pods, for mounting with
	// extraVolumeMounts.
	// +kubebuilder:validation:MaxItems=16
	// +listType=map
	// +listMapKey=name
	// +optional
	ExtraVolumes []ExtraVolume `json:"extraVolumes,omitempty"`

	// ExtraVolumeMounts are added to the Envoy container.
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:XValidation:rule="self.all(m, !m.mountPath.startsWith('/var/run/isobar'))",message="extraVolumeMounts may not mount below /var/run/isobar, where the operator mounts Envoy's bootstrap and certificates"
	// +listType=atomic
	// +optional
	ExtraVolumeMounts []corev1.VolumeMount `json:"extraVolumeMounts,omitempty"`

	// Drain is how an Envoy pod that is stopping lets its connections finish.
	// +kubebuilder:default={}
	// +optional
	Drain DrainSettings `json:"drain,omitempty"`

	// PodDisruptionBudget, when set, limits how many Envoy pods voluntary
	// disruptions (node drains, upgrades) take down at once.
	// +optional
	PodDisruptionBudget *PodDisruptionBudgetSettings `json:"podDisruptionBudget,omitempty"`

	// NetworkPublishing is how Envoy is exposed: the Service the operator
	// creates for the Gateway's listeners.
	// +kubebuilder:default={}
	// +optional
	NetworkPublishing NetworkPublishing `json:"networkPublishing,omitempty"`

	WorkloadSettings `json:",inline"`
}

// WorkloadType is the kind of workload that runs Envoy.
// +kubebuilder:validation:Enum=DaemonSet;Deployment
type WorkloadType string

const (
	WorkloadTypeDaemonSet  WorkloadType = "DaemonSet"
	WorkloadTypeDeployment WorkloadType = "Deployment"
)

// EnvoyLogLevel is Envoy's --log-level.
// +kubebuilder:validation:Enum=trace;debug;info;warning;error;critical;off
type EnvoyLogLevel string

const (
	EnvoyLogTrace    EnvoyLogLevel = "trace"
	EnvoyLogDebug    EnvoyLogLevel = "debug"
	EnvoyLogInfo     EnvoyLogLevel = "info"
	EnvoyLogWarning  EnvoyLogLevel = "warning"
	EnvoyLogError    EnvoyLogLevel = "error"
	EnvoyLogCritical EnvoyLogLevel = "critical"
	EnvoyLogOff      EnvoyLogLevel = "off"
)

// ExtraVolume is a volume for the Envoy pods. It offers the volume sources a
// proxy has a use for, rather than all of corev1.VolumeSource, which keeps the
// CRD small enough for client-side kubectl apply.
// +kubebuilder:validation:XValidation:rule="[has(self.configMap), has(self.secret), has(self.emptyDir), has(self.hostPath), has(self.persistentVolumeClaim), has(self.csi)].filter(x, x).size() == 1",message="set exactly one of configMap, secret, emptyDir, hostPath, persistentVolumeClaim and csi"
type ExtraVolume struct {
	// Name of the volume, referred to by extraVolumeMounts. Names starting
	// with "isobar-" are the operator's.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +kubebuilder:validation:XValidation:rule="!self.startsWith('isobar-')",message="volume names starting with isobar- are reserved for the operator"
	Name string `json:"name"`

	// +optional
	ConfigMap *corev1.ConfigMapVolumeSource `json:"configMap,omitempty"`
	// +optional
	Secret *corev1.SecretVolumeSource `json:"secret,omitempty"`
	// +optional
	EmptyDir *corev1.EmptyDirVolumeSource `json:"emptyDir,omitempty"`
	// +optional
	HostPath *corev1.HostPathVolumeSource `json:"hostPath,omitempty"`
	// +optional
	PersistentVolumeClaim *corev1.PersistentVolumeClaimVolumeSource `json:"persistentVolumeClaim,omitempty"`
	// +optional
	CSI *corev1.CSIVolumeSource `json:"csi,omitempty"`
}

// DrainSettings shape Envoy's graceful shutdown. When a pod is told to stop,
// it first keeps serving for minDuration, so that load balancers and
// endpoints notice it is leaving, then asks Envoy to drain its listeners and
// waits until its connections are gone or timeout has passed. The pod's
// termination grace period is derived from them.
// +kubebuilder:validation:XValidation:rule="!has(self.minDuration) || !has(self.timeout) || duration(self.minDuration) <= duration(self.timeout)",message="minDuration must not be longer than timeout"
type DrainSettings struct {
	// Timeout is the longest a stopping Envoy waits for connections to finish.
	// +kubebuilder:default="60s"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|ms|s|m|h))+$`
	// +kubebuilder:validation:XValidation:rule="duration(self) <= duration('1h')",message="timeout must be at most 1h"
	// +optional
	Timeout *metav1.Duration `json:"timeout,omitempty"`

	// MinDuration is how long a stopping Envoy keeps accepting new
	// connections before it starts to drain.
	// +kubebuilder:default="5s"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|ms|s|m|h))+$`
	// +optional
	MinDuration *metav1.Duration `json:"minDuration,omitempty"`

	// Strategy is Envoy's --drain-strategy: Gradual closes connections
	// progressively over the drain time, Immediate tells all clients at once.
	// +kubebuilder:default=Gradual
	// +optional
	Strategy DrainStrategy `json:"strategy,omitempty"`
}

// DrainStrategy is Envoy's --drain-strategy.
// +kubebuilder:validation:Enum=Gradual;Immediate
type DrainStrategy string

const (
	DrainGradual   DrainStrategy = "Gradual"
	DrainImmediate DrainStrategy = "Immediate"
)

// PodDisruptionBudgetSettings become the Envoy pods' PodDisruptionBudget.
// +kubebuilder:validation:XValidation:rule="has(self.minAvailable) != has(self.maxUnavailable)",message="set exactly one of minAvailable and maxUnavailable"
type PodDisruptionBudgetSettings struct {
	// MinAvailable is a count or a percentage of Envoy pods.
	// +kubebuilder:validation:XValidation:rule="type(self) == int ? self >= 0 : self.matches('^(100|[1-9]?[0-9])%$')",message="minAvailable must be a count (0 or more) or a percentage from 0% to 100%"
	// +optional
	MinAvailable *intstr.IntOrString `json:"minAvailable,omitempty"`
	// MaxUnavailable is a count or a percentage of Envoy pods.
	// +kubebuilder:validation:XValidation:rule="type(self) == int ? self >= 0 : self.matches('^(100|[1-9]?[0-9])%$')",message="maxUnavailable must be a count (0 or more) or a percentage from 0% to 100%"
	// +optional
	MaxUnavailable *intstr.IntOrString `json:"maxUnavailable,omitempty"`
}
