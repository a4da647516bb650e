package contourconfig

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	"isobar.dev/api/v1alpha1"
)

// deploymentRules are the deployment settings of Contour's
// ContourDeployment (contour. and envoy.), in the order of its
// documentation.
var deploymentRules = []Rule{
	{Path: "contour.replicas", Profile: "controller.replicas", carry: func(in *input, out *v1alpha1.ContourDeploymentSpec) error {
		out.Controller.Replicas = ptr.To(in.deployment.Contour.Replicas) //nolint:staticcheck // deprecated by Contour, still set by its users
		return nil
	}},
	{Path: "contour.deployment.replicas", Profile: "controller.replicas", carry: func(in *input, out *v1alpha1.ContourDeploymentSpec) error {
		out.Controller.Replicas = ptr.To(in.deployment.Contour.Deployment.Replicas)
		return nil
	}},
	{Path: "contour.deployment.strategy", NotCarried: "the operator rolls controllers itself, one fleet after another (rollout.maxFleets)"},
	{Path: "contour.nodePlacement", Profile: "controller.nodePlacement", carry: func(in *input, out *v1alpha1.ContourDeploymentSpec) error {
		out.Controller.NodePlacement = nodePlacement(in.deployment.Contour.NodePlacement)
		return nil
	}},
	{Path: "contour.kubernetesLogLevel", NotCarried: "the controller logs Kubernetes client errors at its own logLevel"},
	{Path: "contour.logLevel", Profile: "controller.logLevel", carry: func(in *input, out *v1alpha1.ContourDeploymentSpec) error {
		out.Controller.LogLevel = v1alpha1.ControllerLogLevel(in.deployment.Contour.LogLevel)
		return nil
	}},
	{Path: "contour.resources", Profile: "controller.resources", carry: func(in *input, out *v1alpha1.ContourDeploymentSpec) error {
		r := in.deployment.Contour.Resources
		out.Controller.Resources = &v1alpha1.Resources{Limits: r.Limits, Requests: r.Requests}
		return nil
	}},
	{Path: "contour.podAnnotations", Profile: "controller.podAnnotations", carry: func(in *input, out *v1alpha1.ContourDeploymentSpec) error {
		out.Controller.PodAnnotations = in.deployment.Contour.PodAnnotations
		return nil
	}},
	{Path: "contour.watchNamespaces", NotCarried: "a Gateway's routes come from the namespaces its listeners allow (allowedRoutes), and its HTTPProxies from rootNamespaces"},
	{Path: "contour.disabledFeatures", NotCarried: "a GatewayClass serves every route kind; Contour's CRDs that Isobar does not install are not watched"},
	{Path: "envoy.workloadType", Profile: "envoy.workloadType", carry: func(in *input, out *v1alpha1.ContourDeploymentSpec) error {
		out.Envoy.WorkloadType = v1alpha1.WorkloadType(in.deployment.Envoy.WorkloadType)
		return nil
	}},
	{Path: "envoy.replicas", Profile: "envoy.replicas", carry: func(in *input, out *v1alpha1.ContourDeploymentSpec) error {
		out.Envoy.Replicas = ptr.To(in.deployment.Envoy.Replicas) //nolint:staticcheck // deprecated by Contour, still set by its users
		return nil
	}},
	{Path: "envoy.deployment.replicas", Profile: "envoy.replicas", carry: func(in *input, out *v1alpha1.ContourDeploymentSpec) error {
		out.Envoy.Replicas = ptr.To(in.deployment.Envoy.Deployment.Replicas)
		return nil
	}},
	{Path: "envoy.deployment.strategy", NotCarried: "the operator drains and rolls Envoys itself (envoy.drain)"},
	{Path: "envoy.daemonSet", NotCarried: "the operator drains and rolls Envoys itself (envoy.drain)"},
	{Path: "envoy.networkPublishing.type", Profile: "envoy.networkPublishing.type", carry: func(in *input, out *v1alpha1.ContourDeploymentSpec) error {
		out.Envoy.NetworkPublishing.Type = v1alpha1.NetworkPublishingType(in.deployment.Envoy.NetworkPublishing.Type)
		return nil
	}},
	{Path: "envoy.networkPublishing.externalTrafficPolicy", Profile: "envoy.networkPublishing.externalTrafficPolicy", carry: func(in *input, out *v1alpha1.ContourDeploymentSpec) error {
		out.Envoy.NetworkPublishing.ExternalTrafficPolicy = ptr.To(in.deployment.Envoy.NetworkPublishing.ExternalTrafficPolicy)
		return nil
	}},
	{Path: "envoy.networkPublishing.ipFamilyPolicy", Profile: "envoy.networkPublishing.ipFamilyPolicy", carry: func(in *input, out *v1alpha1.ContourDeploymentSpec) error {
		out.Envoy.NetworkPublishing.IPFamilyPolicy = ptr.To(in.deployment.Envoy.NetworkPublishing.IPFamilyPolicy)
		return nil
	}},
	{Path: "envoy.networkPublishing.serviceAnnotations", Profile: "envoy.networkPublishing.serviceAnnotations", carry: func(in *input, out *v1alpha1.ContourDeploymentSpec) error {
		out.Envoy.NetworkPublishing.ServiceAnnotations = in.deployment.Envoy.NetworkPublishing.ServiceAnnotations
		return nil
	}},
	{Path: "envoy.nodePlacement", Profile: "envoy.nodePlacement", carry: func(in *input, out *v1alpha1.ContourDeploymentSpec) error {
		out.Envoy.NodePlacement = nodePlacement(in.deployment.Envoy.NodePlacement)
		return nil
	}},
	{Path: "envoy.extraVolumes", NotCarried: "the profile's envoy.extraVolumes take ConfigMap, Secret, emptyDir, hostPath, PVC and CSI volumes only; add them by hand"},
	{Path: "envoy.extraVolumeMounts", Profile: "envoy.extraVolumeMounts", carry: func(in *input, out *v1alpha1.ContourDeploymentSpec) error {
		out.Envoy.ExtraVolumeMounts = in.deployment.Envoy.ExtraVolumeMounts
		return nil
	}},
	{Path: "envoy.podAnnotations", Profile: "envoy.podAnnotations", carry: func(in *input, out *v1alpha1.ContourDeploymentSpec) error {
		out.Envoy.PodAnnotations = in.deployment.Envoy.PodAnnotations
		return nil
	}},
	{Path: "envoy.resources", Profile: "envoy.resources", carry: func(in *input, out *v1alpha1.ContourDeploymentSpec) error {
		r := in.deployment.Envoy.Resources
		out.Envoy.Resources = &v1alpha1.Resources{Limits: r.Limits, Requests: r.Requests}
		return nil
	}},
	{Path: "envoy.logLevel", Profile: "envoy.logLevel", carry: func(in *input, out *v1alpha1.ContourDeploymentSpec) error {
		out.Envoy.LogLevel = v1alpha1.EnvoyLogLevel(in.deployment.Envoy.LogLevel)
		return nil
	}},
	{Path: "envoy.baseID", Profile: "envoy.baseID", carry: func(in *input, out *v1alpha1.ContourDeploymentSpec) error {
		out.Envoy.BaseID = ptr.To(in.deployment.Envoy.BaseID)
		return nil
	}},
	{Path: "envoy.overloadMaxHeapSize", Profile: "envoy.overloadMaxHeapSize", carry: func(in *input, out *v1alpha1.ContourDeploymentSpec) error {
		out.Envoy.OverloadMaxHeapSize = resource.NewQuantity(int64(in.deployment.Envoy.OverloadMaxHeapSize), resource.BinarySI)
		return nil
	}},
	{Path: "envoy.overloadMaxDownstreamConnections", Profile: "envoy.overloadMaxDownstreamConnections", carry: func(in *input, out *v1alpha1.ContourDeploymentSpec) error {
		n := in.deployment.Envoy.OverloadMaxDownstreamConnections
		if n > 1<<63-1 {
			return fmt.Errorf("envoy.overloadMaxDownstreamConnections %d is too large", n)
		}
		out.Envoy.OverloadMaxDownstreamConnections = ptr.To(int64(n))
		return nil
	}},
	{Path: "resourceLabels", NotCarried: "the operator labels what it creates with the Gateway's name and its own; add labels with envoy.podLabels"}}
