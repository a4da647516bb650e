package render

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"isobar.dev/api/accesslog"
	"isobar.dev/api/v1alpha1"
)

// validate refuses what the CRD's schema cannot see or a profile merged
// from two ContourDeployments may still combine: each rule has its CEL
// twin, and this one also guards the merge and the offline tools.
func validate(spec v1alpha1.ContourDeploymentSpec) error {
	if err := accesslog.Validate(spec.RuntimeSettings.AccessLog); err != nil {
		return fmt.Errorf("spec.%w", err)
	}
	es := spec.Envoy
	if heap := es.OverloadMaxHeapSize; heap != nil && es.Resources != nil {
		if limit, ok := es.Resources.Limits[corev1.ResourceMemory]; ok && heap.Cmp(limit) >= 0 {
			return fmt.Errorf("spec.envoy.overloadMaxHeapSize %s must be below the memory limit %s: Envoy is killed at the limit before the overload manager acts", heap, &limit)
		}
	}
	return nil
}
