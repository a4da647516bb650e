package render

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"isobar.dev/api/accesslog"
	"isobar.dev/api/envoyruntime"
	"isobar.dev/api/v1alpha1"
)

// validate refuses what the CRD's schema cannot see or a profile merged
// from two ContourDeployments may still combine: the schema has a twin of
// each rule but the node port range, which is the API server's setting
// (and which its dry run does not check).
func validate(spec v1alpha1.ContourDeploymentSpec, nodePorts PortRange) error {
	if err := checkImages(spec); err != nil {
		return err
	}
	if err := accesslog.Validate(spec.RuntimeSettings.AccessLog); err != nil {
		return fmt.Errorf("spec.%w", err)
	}
	if hp := spec.RuntimeSettings.HTTPProxy; hp != nil && hp.RateLimitService != nil {
		if err := hp.RateLimitService.Validate(); err != nil {
			return fmt.Errorf("spec.%w", err)
		}
	}
	if a := spec.RuntimeSettings.GlobalExtAuth; a != nil {
		if err := a.Validate(); err != nil {
			return fmt.Errorf("spec.%w", err)
		}
	}
	es := spec.Envoy
	if heap := es.OverloadMaxHeapSize; heap != nil && es.Resources != nil {
		if limit, ok := es.Resources.Limits[corev1.ResourceMemory]; ok && heap.Cmp(limit) >= 0 {
			return fmt.Errorf("spec.envoy.overloadMaxHeapSize %s must be below the memory limit %s: Envoy is killed at the limit before the overload manager acts", heap, &limit)
		}
	}
	if n := es.OverloadMaxDownstreamConnections; n != nil && *n < 1 {
		return fmt.Errorf("spec.envoy.overloadMaxDownstreamConnections %d must be at least 1", *n)
	}
	if n := es.MaxRequestsPerIOCycle; n != nil && (*n < 1 || *n > 1<<32-1) {
		return fmt.Errorf("spec.envoy.maxRequestsPerIOCycle %d must be from 1 to 4294967295", *n)
	}
	if err := envoyruntime.Check(es.Runtime); err != nil {
		return fmt.Errorf("spec.envoy.runtime: %w", err)
	}
	if nodePorts.Max > 0 {
		for i, p := range es.NetworkPublishing.NodePorts {
			if p.NodePort < nodePorts.Min || p.NodePort > nodePorts.Max {
				return fmt.Errorf("spec.envoy.networkPublishing.nodePorts[%d].nodePort %d is outside the cluster's node port range %s (the operator's --service-node-port-range, which must be the API server's)", i, p.NodePort, nodePorts)
			}
		}
	}
	return nil
}
