package gatewayapi

import (
	"cmp"
	"time"

	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"isobar.dev/api/v1alpha1"
	"isobar.dev/controller/pkg/ir"
)

// ConditionTracing says, on a Gateway whose profile asks for tracing,
// whether its Envoys can send their spans to the profile's collector.
const ConditionTracing gatewayv1.GatewayConditionType = "isobar.dev/Tracing"

// Defaults of the profile's tracing, as Contour has them.
const (
	defaultTracingService   = "contour"
	defaultMaxPathTagLength = 256
)

// tracing resolves the profile's tracing for every connection manager:
// its collector's cluster (one without endpoints when the ExtensionService
// cannot be used, which the Gateway's status says), the sampling and the
// spans' attributes.
func (t *gatewayTranslator) tracing() (tr *ir.Tracing, problem string) {
	s := t.profile.Tracing
	if s == nil {
		return nil, ""
	}
	cluster, authority, timeout, problem := t.extensionServer(s.ExtensionService, "tracing")
	// The profile was validated when it was read.
	sampling, _ := s.Sampling()
	client, random, _ := s.ClientAndRandomSampling()
	tr = &ir.Tracing{
		Cluster: cluster, Authority: authority, Timeout: timeout,
		ServiceName: cmp.Or(s.ServiceName, defaultTracingService), Sampling: sampling, ClientSampling: client, RandomSampling: random,
		MaxPathTagLength: cmp.Or(s.MaxPathTagLength, defaultMaxPathTagLength),
	}
	if s.IncludePodDetail {
		// The Envoy Pods are in the Gateway's namespace, and know their
		// names.
		tr.Tags = append(tr.Tags, ir.TracingTag{Name: "podName", Environment: "POD_NAME"}, ir.TracingTag{Name: "podNamespaceName", Literal: t.gw.Namespace})
	}
	for _, c := range s.CustomTags {
		tr.Tags = append(tr.Tags, ir.TracingTag{Name: c.TagName, Literal: c.Literal, Header: c.RequestHeaderName})
	}
	return tr, problem
}

// setTracingCondition says whether the Gateway's spans reach the
// collector (problem, from tracing, says why not); a Gateway without
// tracing has no such condition.
func (t *gatewayTranslator) setTracingCondition(c *gatewayConditions, problem string) {
	switch s := t.profile.Tracing; {
	case s == nil:
	case problem != "":
		c.Set(ConditionTracing, false, "ExtensionServiceNotUsable", "runtimeSettings.tracing: "+problem+"; spans are dropped")
	default:
		c.Set(ConditionTracing, true, "Tracing", "spans of sampled requests go to ExtensionService "+s.ExtensionService.Namespace+"/"+s.ExtensionService.Name)
	}
}

// extensionServer resolves an ExtensionService the profile names for
// every connection manager (ExtensionServer), adds the clusters it needs
// (one without endpoints when it cannot be used: msg says why) and
// writes the ExtensionService's status.
func (t *gatewayTranslator) extensionServer(ref v1alpha1.ObjectReference, purpose string) (cluster, authority string, timeout time.Duration, msg string) {
	k := key(ref.Namespace, ref.Name)
	cluster, authority, timeout, clusters, msg := t.extensions.Server(t.env, &t.cache.Names, k, purpose)
	for _, c := range clusters {
		t.ensureCluster(c)
	}
	if msg != "" {
		t.clusters[cluster] = &ir.Cluster{Name: cluster, HTTP2: true}
	}
	if x, ok := t.env.ExtensionService(k.Namespace, k.Name); ok {
		t.status.ExtensionServices[k] = t.extensions.Status(t.env, x)
	}
	return cluster, authority, timeout, msg
}
