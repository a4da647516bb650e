package render

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"isobar.dev/api/fleet"
	"isobar.dev/api/ports"
	"isobar.dev/api/v1alpha1"
)

// envoyWorkload is the Envoy DaemonSet or Deployment. Its pod template
// does not depend on the Gateway's listeners (the Service maps them), so
// listener changes never restart Envoy.
func (r *renderer) envoyWorkload() (client.Object, error) {
	es := r.in.Spec.Envoy
	gw := r.in.Gateway
	image := r.in.Images.Envoy
	if es.Image != "" {
		image = es.Image
	}
	logLevel := string(es.LogLevel)
	if logLevel == "" {
		logLevel = "info"
	}
	drainTimeout, minDrain := 60*time.Second, 5*time.Second
	if es.Drain.Timeout != nil {
		drainTimeout = es.Drain.Timeout.Duration
	}
	if es.Drain.MinDuration != nil {
		minDrain = es.Drain.MinDuration.Duration
	}
	strategy := strings.ToLower(string(es.Drain.Strategy))
	if strategy == "" {
		strategy = "gradual"
	}
	args := []string{
		"-c", BootstrapDir + "/envoy.json",
		"--log-level", logLevel,
		"--drain-time-s", strconv.Itoa(int(drainTimeout.Seconds())),
		"--drain-strategy", strategy,
	}
	if es.BaseID != nil {
		args = append(args, "--base-id", strconv.Itoa(int(*es.BaseID)))
	}
	volumes := []corev1.Volume{
		{Name: "certs", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: r.names.EnvoyCerts}}},
		{Name: "bootstrap", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
	}
	mounts := []corev1.VolumeMount{
		{Name: "certs", MountPath: CertsDir, ReadOnly: true},
		{Name: "bootstrap", MountPath: BootstrapDir, ReadOnly: true},
	}
	for i, v := range es.ExtraVolumes {
		if v.Name == "certs" || v.Name == "bootstrap" {
			return nil, fmt.Errorf("spec.envoy.extraVolumes[%d]: the name %q is the fleet's own", i, v.Name)
		}
		volumes = append(volumes, corev1.Volume{Name: v.Name, VolumeSource: corev1.VolumeSource{
			ConfigMap: v.ConfigMap, Secret: v.Secret, EmptyDir: v.EmptyDir, HostPath: v.HostPath,
			PersistentVolumeClaim: v.PersistentVolumeClaim, CSI: v.CSI,
		}})
	}
	for i, m := range es.ExtraVolumeMounts {
		if strings.HasPrefix(m.MountPath, v1alpha1.ReservedMountPrefix) {
			return nil, fmt.Errorf("spec.envoy.extraVolumeMounts[%d]: mountPath %s is under %s, which the fleet uses", i, m.MountPath, v1alpha1.ReservedMountPrefix)
		}
		mounts = append(mounts, m)
	}
	podLabels := r.labels(fleet.Envoy)
	for k, v := range es.PodLabels {
		if _, fleetLabel := podLabels[k]; !fleetLabel {
			podLabels[k] = string(v)
		}
	}
	// The Gateway's infrastructure annotations, then the profile's, over
	// the scrape defaults.
	podAnnotations := map[string]string{"prometheus.io/scrape": "true", "prometheus.io/port": strconv.Itoa(ports.EnvoyStats), "prometheus.io/path": "/stats/prometheus"}
	maps.Copy(podAnnotations, r.annotations())
	for k, v := range es.PodAnnotations {
		podAnnotations[k] = v
	}
	podEnv := []corev1.EnvVar{{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}}}
	pod := corev1.PodSpec{
		ServiceAccountName:           r.names.EnvoyAccount,
		AutomountServiceAccountToken: ptr(false),
		PriorityClassName:            es.PriorityClassName,
		ImagePullSecrets:             es.ImagePullSecrets,
		SecurityContext:              podSecurity(),
		// Draining takes up to the drain timeout; then Envoy gets SIGTERM.
		TerminationGracePeriodSeconds: ptr(int64(drainTimeout.Seconds()) + 30),
		InitContainers: []corev1.Container{{
			Name:  "bootstrap",
			Image: r.in.Images.Controller,
			Args: append([]string{
				"bootstrap",
				"--cluster=" + gw.Namespace + "/" + gw.Name,
				"--xds-address=" + r.names.ControllerServiceDNS,
				"--certs-dir=" + CertsDir,
				"--output-dir=" + BootstrapDir,
			}, bootstrapLimits(es)...),
			Env:             podEnv,
			SecurityContext: containerSecurity(),
			VolumeMounts: []corev1.VolumeMount{
				{Name: "bootstrap", MountPath: BootstrapDir},
			},
		}},
		Containers: []corev1.Container{
			{
				Name:  "envoy",
				Image: image,
				Args:  args,
				Env:   podEnv,
				Ports: envoyPorts(es),
				ReadinessProbe: &corev1.Probe{
					ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/ready", Port: intstr.FromInt32(ports.EnvoyStats)}},
					PeriodSeconds: 3, FailureThreshold: 3,
				},
				// On shutdown the drain sidecar fails Envoy's health checks
				// and waits for connections to finish before Envoy stops.
				Lifecycle: &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{
					HTTPGet: &corev1.HTTPGetAction{Path: "/shutdown", Port: intstr.FromInt32(ports.EnvoyShutdown)},
				}},
				SecurityContext: containerSecurity(),
				VolumeMounts:    mounts,
			},
			{
				Name:  "drain",
				Image: r.in.Images.Controller,
				Args: []string{
					"drain",
					"--listen=:" + strconv.Itoa(ports.EnvoyShutdown),
					"--admin-address=127.0.0.1:" + strconv.Itoa(ports.EnvoyAdmin),
					"--strategy=" + strategy,
					"--min-duration=" + minDrain.String(),
					"--timeout=" + drainTimeout.String(),
				},
				Ports:           []corev1.ContainerPort{{Name: "drain", ContainerPort: ports.EnvoyShutdown, Protocol: corev1.ProtocolTCP}},
				SecurityContext: containerSecurity(),
			},
		},
		Volumes: volumes,
	}
	if res := es.Resources; res != nil {
		pod.Containers[0].Resources = res.Requirements()
	}
	placement(&pod, es.NodePlacement)
	template := corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: podLabels, Annotations: podAnnotations}, Spec: pod}
	selector := &metav1.LabelSelector{MatchLabels: r.selector(fleet.Envoy)}
	meta := r.meta(r.names.Envoy, fleet.Envoy)
	if es.WorkloadType == v1alpha1.WorkloadTypeDeployment {
		replicas := es.Replicas
		if replicas == nil {
			replicas = ptr[int32](2)
		}
		if r.in.Autoscaled[r.names.Envoy] {
			replicas = nil
		}
		return &appsv1.Deployment{
			TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
			ObjectMeta: meta,
			Spec: appsv1.DeploymentSpec{Replicas: replicas, Selector: selector, Template: template,
				Strategy: appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType, RollingUpdate: &appsv1.RollingUpdateDeployment{
					MaxUnavailable: ptr(intstr.FromInt32(0)), MaxSurge: ptr(intstr.FromString("25%")),
				}}},
		}, nil
	}
	return &appsv1.DaemonSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "DaemonSet"},
		ObjectMeta: meta,
		Spec: appsv1.DaemonSetSpec{Selector: selector, Template: template,
			// A node's new Envoy starts, and is Ready, before its old one
			// drains: a node is never without one, as an upgrade without
			// an outage needs. Envoy binds no host ports, so two fit.
			UpdateStrategy: appsv1.DaemonSetUpdateStrategy{Type: appsv1.RollingUpdateDaemonSetStrategyType, RollingUpdate: &appsv1.RollingUpdateDaemonSet{
				MaxUnavailable: ptr(intstr.FromInt32(0)), MaxSurge: ptr(intstr.FromString("10%")),
			}}},
	}, nil
}

// podDisruptionBudget is rendered only when the profile asks for one.
func (r *renderer) podDisruptionBudget() *policyv1.PodDisruptionBudget {
	p := r.in.Spec.Envoy.PodDisruptionBudget
	if p == nil {
		return nil
	}
	return &policyv1.PodDisruptionBudget{
		TypeMeta:   metav1.TypeMeta{APIVersion: "policy/v1", Kind: "PodDisruptionBudget"},
		ObjectMeta: r.meta(r.names.Envoy, fleet.Envoy),
		Spec: policyv1.PodDisruptionBudgetSpec{
			Selector:       &metav1.LabelSelector{MatchLabels: r.selector(fleet.Envoy)},
			MinAvailable:   p.MinAvailable,
			MaxUnavailable: p.MaxUnavailable,
		},
	}
}

// envoyPorts are the Envoy container's own ports, named so that a
// load balancer's health check or a scrape can refer to them by name.
func envoyPorts(es v1alpha1.EnvoySettings) []corev1.ContainerPort {
	out := []corev1.ContainerPort{{Name: "metrics", ContainerPort: ports.EnvoyStats, Protocol: corev1.ProtocolTCP}}
	if es.OMEnforcedHealth != nil && *es.OMEnforcedHealth {
		out = append(out, corev1.ContainerPort{Name: "om-health", ContainerPort: ports.EnvoyOverloadHealth, Protocol: corev1.ProtocolTCP})
	}
	return out
}

// bootstrapLimits are the profile's limits Envoy reads from its bootstrap:
// the overload manager's heap size and connection limit, the
// overload-enforced health listener, and the requests per I/O cycle.
func bootstrapLimits(es v1alpha1.EnvoySettings) []string {
	var out []string
	if es.OverloadMaxHeapSize != nil {
		out = append(out, "--max-heap-bytes="+strconv.FormatInt(es.OverloadMaxHeapSize.Value(), 10))
	}
	if n := es.OverloadMaxDownstreamConnections; n != nil {
		out = append(out, "--max-downstream-connections="+strconv.FormatInt(*n, 10))
	}
	if es.OMEnforcedHealth != nil && *es.OMEnforcedHealth {
		out = append(out, "--om-enforced-health")
	}
	if n := es.MaxRequestsPerIOCycle; n != nil {
		out = append(out, "--max-requests-per-io-cycle="+strconv.FormatInt(*n, 10))
	}
	// Sorted, so that the same profile renders the same Pods.
	for _, k := range slices.Sorted(maps.Keys(es.Runtime)) {
		out = append(out, "--runtime="+k+"="+es.Runtime[k])
	}
	return out
}
