package render

import (
	"maps"
	"path"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"isobar.dev/api/fleet"
	"isobar.dev/api/ports"
	"isobar.dev/api/v1alpha1"
)

// ConfigHashAnnotation on the controller's pod template changes with the
// runtime settings, so that the controller restarts to apply them; Envoy's
// pods carry no such thing and keep running.
const ConfigHashAnnotation = "isobar.dev/runtime-settings-hash"

func (r *renderer) controllerDeployment() *appsv1.Deployment {
	cs := r.in.Spec.Controller
	gw := r.in.Gateway
	replicas := cs.Replicas
	if replicas == nil {
		replicas = ptr[int32](2)
	}
	if r.in.Autoscaled[r.names.Controller] {
		replicas = nil
	}
	logLevel := string(cs.LogLevel)
	if logLevel == "" {
		logLevel = "info"
	}
	image := r.in.Images.Controller
	if cs.Image != "" {
		image = cs.Image
	}
	podLabels := r.labels(fleet.Controller)
	for k, v := range cs.PodLabels {
		if _, fleetLabel := podLabels[k]; !fleetLabel {
			podLabels[k] = string(v)
		}
	}
	// The Gateway's infrastructure annotations, then the profile's; the
	// runtime settings' hash is the operator's.
	podAnnotations := map[string]string{}
	maps.Copy(podAnnotations, r.annotations())
	maps.Copy(podAnnotations, cs.PodAnnotations)
	podAnnotations[ConfigHashAnnotation] = r.configHash
	args := []string{"serve", "--gateway=" + gw.Namespace + "/" + gw.Name}
	if r.in.Static {
		args = []string{"serve", "--leader-election-namespace=" + gw.Namespace}
	}
	args = append(args,
		"--controller-name="+r.in.ControllerName,
		"--envoy-service="+gw.Namespace+"/"+r.names.Envoy,
		"--xds-address=:"+strconv.Itoa(ports.XDS),
		"--xds-cert-file="+path.Join(CertsDir, fleet.CertKey),
		"--xds-key-file="+path.Join(CertsDir, fleet.KeyKey),
		"--xds-ca-file="+path.Join(CertsDir, fleet.CAKey),
		"--health-address=:"+strconv.Itoa(ports.ControllerHealth),
		"--metrics-address=:"+strconv.Itoa(ports.ControllerMetrics),
		"--runtime-settings="+ConfigDir+"/"+RuntimeConfigFile,
		"--leader-elect",
		"--log-level="+logLevel,
		"--log-format=json",
	)
	probe := func(path string) *corev1.Probe {
		return &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: path, Port: intstr.FromInt32(ports.ControllerHealth)}},
			PeriodSeconds: 10, FailureThreshold: 3}
	}
	pod := corev1.PodSpec{
		ServiceAccountName:           r.names.ControllerAccount,
		AutomountServiceAccountToken: ptr(true),
		PriorityClassName:            cs.PriorityClassName,
		ImagePullSecrets:             cs.ImagePullSecrets,
		SecurityContext:              podSecurity(),
		Containers: []corev1.Container{{
			Name:  "controller",
			Image: image,
			Args:  args,
			Env: []corev1.EnvVar{
				{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
				{Name: "POD_NAMESPACE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}},
			},
			Ports: []corev1.ContainerPort{
				{Name: "xds", ContainerPort: ports.XDS, Protocol: corev1.ProtocolTCP},
				{Name: "health", ContainerPort: ports.ControllerHealth, Protocol: corev1.ProtocolTCP},
				{Name: "metrics", ContainerPort: ports.ControllerMetrics, Protocol: corev1.ProtocolTCP},
			},
			ReadinessProbe:  probe("/readyz"),
			LivenessProbe:   probe("/healthz"),
			SecurityContext: containerSecurity(),
			VolumeMounts: []corev1.VolumeMount{
				{Name: "certs", MountPath: CertsDir, ReadOnly: true},
				{Name: "config", MountPath: ConfigDir, ReadOnly: true},
			},
		}},
		Volumes: []corev1.Volume{
			{Name: "certs", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: r.names.ControllerCerts}}},
			{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: r.names.ControllerConfig}}}},
		},
	}
	if res := cs.Resources; res != nil {
		pod.Containers[0].Resources = res.Requirements()
		if limit, ok := pod.Containers[0].Resources.Limits[corev1.ResourceMemory]; ok {
			// Go's garbage collector lets the heap grow to twice what is
			// live before it collects; near the container's limit it
			// collects sooner instead of the kernel killing the
			// controller. A tenth is left for what is not Go heap.
			pod.Containers[0].Env = append(pod.Containers[0].Env, corev1.EnvVar{Name: "GOMEMLIMIT", Value: strconv.FormatInt(limit.Value()/10*9, 10)})
		}
	}
	placement(&pod, cs.NodePlacement)
	return &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: r.meta(r.names.Controller, fleet.Controller),
		Spec: appsv1.DeploymentSpec{
			Replicas: replicas,
			Selector: &metav1.LabelSelector{MatchLabels: r.selector(fleet.Controller)},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: podLabels, Annotations: podAnnotations},
				Spec:       pod,
			},
		},
	}
}

func (r *renderer) controllerService() *corev1.Service {
	return &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: r.meta(r.names.Controller, fleet.Controller),
		Spec: corev1.ServiceSpec{
			Type:     corev1.ServiceTypeClusterIP,
			Selector: r.selector(fleet.Controller),
			Ports: []corev1.ServicePort{{
				Name: "xds", Port: ports.XDS, TargetPort: intstr.FromInt32(ports.XDS), Protocol: corev1.ProtocolTCP,
				AppProtocol: ptr("kubernetes.io/h2c"),
			}},
		},
	}
}

func podSecurity() *corev1.PodSecurityContext {
	return &corev1.PodSecurityContext{
		RunAsNonRoot:   ptr(true),
		RunAsUser:      ptr[int64](65532),
		RunAsGroup:     ptr[int64](65532),
		FSGroup:        ptr[int64](65532),
		SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
}

func containerSecurity() *corev1.SecurityContext {
	return &corev1.SecurityContext{
		AllowPrivilegeEscalation: ptr(false),
		ReadOnlyRootFilesystem:   ptr(true),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
	}
}

// placement copies a workload's node placement into its pods.
func placement(pod *corev1.PodSpec, p *v1alpha1.NodePlacement) {
	if p == nil {
		return
	}
	if len(p.NodeSelector) > 0 {
		pod.NodeSelector = map[string]string{}
		for k, v := range p.NodeSelector {
			pod.NodeSelector[k] = string(v)
		}
	}
	pod.Tolerations = p.Tolerations
	pod.Affinity = p.Affinity
	pod.TopologySpreadConstraints = p.TopologySpreadConstraints
}
