package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
)

// NetworkPublishing configures the Service that publishes a Gateway's
// listeners. It has one port per distinct listener port; its target ports
// follow the privileged-port mapping of package isobar.dev/api/ports.
// +kubebuilder:validation:XValidation:rule="self.type != 'ClusterIPService' || !has(self.externalTrafficPolicy)",message="externalTrafficPolicy applies only to LoadBalancerService and NodePortService"
// +kubebuilder:validation:XValidation:rule="self.type == 'LoadBalancerService' || (!has(self.loadBalancerClass) && !has(self.loadBalancerSourceRanges))",message="loadBalancerClass and loadBalancerSourceRanges apply only to LoadBalancerService"
// +kubebuilder:validation:XValidation:rule="self.type != 'ClusterIPService' || !has(self.nodePorts)",message="nodePorts apply only to NodePortService and LoadBalancerService"
type NetworkPublishing struct {
	// Type of the Service.
	// +kubebuilder:default=LoadBalancerService
	// +optional
	Type NetworkPublishingType `json:"type,omitempty"`

	// ExternalTrafficPolicy of the Service. Unset, the operator uses Local,
	// which keeps the client's source address and avoids a second hop.
	// +kubebuilder:validation:Enum=Cluster;Local
	// +optional
	ExternalTrafficPolicy *corev1.ServiceExternalTrafficPolicy `json:"externalTrafficPolicy,omitempty"`

	// IPFamilyPolicy of the Service; unset, the cluster's default.
	// +kubebuilder:validation:Enum=SingleStack;PreferDualStack;RequireDualStack
	// +optional
	IPFamilyPolicy *corev1.IPFamilyPolicy `json:"ipFamilyPolicy,omitempty"`

	// ServiceAnnotations are added to the Service, typically to configure a
	// cloud load balancer. Keys are checked as podAnnotations'.
	// +kubebuilder:validation:MaxProperties=64
	// +optional
	ServiceAnnotations map[string]string `json:"serviceAnnotations,omitempty"`

	// LoadBalancerClass selects the load balancer implementation. The
	// API server does not let it change on an existing Service.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +optional
	LoadBalancerClass *string `json:"loadBalancerClass,omitempty"`

	// LoadBalancerSourceRanges restrict which client CIDRs the load balancer
	// accepts.
	// +kubebuilder:validation:MaxItems=64
	// +listType=set
	// +optional
	LoadBalancerSourceRanges []CIDR `json:"loadBalancerSourceRanges,omitempty"`

	// NodePorts fix the node port of some listener ports; the others get
	// one from the cluster.
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:XValidation:rule="self.all(a, self.filter(b, b.nodePort == a.nodePort).size() == 1)",message="each nodePort may be used by one listener port only"
	// +listType=map
	// +listMapKey=port
	// +optional
	NodePorts []NodePort `json:"nodePorts,omitempty"`
}

// NetworkPublishingType is the type of Service that publishes Envoy.
// +kubebuilder:validation:Enum=LoadBalancerService;NodePortService;ClusterIPService
type NetworkPublishingType string

const (
	LoadBalancerServicePublishing NetworkPublishingType = "LoadBalancerService"
	NodePortServicePublishing     NetworkPublishingType = "NodePortService"
	ClusterIPServicePublishing    NetworkPublishingType = "ClusterIPService"
)

// CIDR is an IPv4 or IPv6 network such as 192.0.2.0/24 or 2001:db8::/32.
// +kubebuilder:validation:MaxLength=43
// +kubebuilder:validation:XValidation:rule="isCIDR(self)",message="must be a CIDR such as 192.0.2.0/24 or 2001:db8::/32"
type CIDR string

// NodePort fixes the node port for one Gateway listener port.
type NodePort struct {
	// Port is a Gateway listener port.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	Port int32 `json:"port"`

	// NodePort is the port every node opens for it; it must lie in the
	// cluster's node port range (30000-32767 unless configured otherwise).
	// The range is the API server's setting, which a schema cannot know:
	// the operator tries the rendered Service on the API server (dry run)
	// and reports a port outside it in the profile's Accepted condition.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	NodePort int32 `json:"nodePort"`
}
