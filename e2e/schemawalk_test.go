package e2e

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	"sigs.k8s.io/yaml"

	"isobar.dev/api/v1alpha1"
	"isobar.dev/controller/pkg/offline"
	controllerserve "isobar.dev/controller/pkg/serve"
	"isobar.dev/e2e/harness"
	"isobar.dev/operator/pkg/certs"
	"isobar.dev/operator/pkg/render"
)

// effect is one setting of the walk: spec differs from base (both
// ContourDeployment specs in YAML, base "{}" when empty) in the field path
// and in what that field needs to be allowed. A path that is not a leaf
// covers the leaves under it: a corev1 type passed to the pods as it is.
type effect struct {
	path, base, spec string
	// shownBy, for a field whose effect is over time rather than in the
	// rendering (how the operator moves from one rendering to the next),
	// names the test, in this module, that shows it.
	shownBy string
}

// effects holds a non-default value for every leaf of the ContourDeployment
// schema. TestEveryProfileFieldHasAnEffect fails for a leaf not covered
// here and for a value that changes neither the rendered fleet (for
// spec.controller, spec.envoy and spec.gateway) nor the Envoy configuration
// or the controller's batching (for spec.runtimeSettings): a field must do
// something or not exist.
var effects = []effect{
	{path: "spec.controller.image", spec: "controller: {image: example.com/isobar-controller:v9}"},
	{path: "spec.controller.imagePullSecrets", spec: "controller: {imagePullSecrets: [{name: pull}]}"},
	{path: "spec.controller.logLevel", spec: "controller: {logLevel: debug}"},
	{path: "spec.controller.replicas", spec: "controller: {replicas: 3}"},
	{path: "spec.controller.nodePlacement.affinity", spec: "controller: {nodePlacement: {affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: [{matchExpressions: [{key: pool, operator: In, values: [system]}]}]}}}}}"},
	{path: "spec.controller.nodePlacement.nodeSelector", spec: "controller: {nodePlacement: {nodeSelector: {pool: system}}}"},
	{path: "spec.controller.nodePlacement.tolerations", spec: "controller: {nodePlacement: {tolerations: [{key: dedicated, operator: Equal, value: system, effect: NoSchedule, tolerationSeconds: 30}]}}"},
	{path: "spec.controller.nodePlacement.topologySpreadConstraints", spec: "controller: {nodePlacement: {topologySpreadConstraints: [{maxSkew: 1, topologyKey: zone, whenUnsatisfiable: DoNotSchedule}]}}"},
	{path: "spec.controller.podAnnotations", spec: "controller: {podAnnotations: {example.com/a: b}}"},
	{path: "spec.controller.podLabels", spec: "controller: {podLabels: {team: web}}"},
	{path: "spec.controller.priorityClassName", spec: "controller: {priorityClassName: system-cluster-critical}"},
	{path: "spec.controller.resources.limits", spec: "controller: {resources: {limits: {memory: 256Mi}}}"},
	{path: "spec.controller.resources.requests", spec: "controller: {resources: {requests: {cpu: 100m}}}"},

	{path: "spec.envoy.baseID", spec: "envoy: {baseID: 7}"},
	{path: "spec.envoy.drain.minDuration", spec: "envoy: {drain: {minDuration: 9s}}"},
	{path: "spec.envoy.drain.strategy", spec: "envoy: {drain: {strategy: Immediate}}"},
	{path: "spec.envoy.drain.timeout", spec: "envoy: {drain: {timeout: 90s}}"},
	{path: "spec.envoy.extraVolumes", base: "envoy: {extraVolumes: [{name: a, emptyDir: {}}]}", spec: "envoy: {extraVolumes: [{name: a, emptyDir: {}}, {name: b, configMap: {name: geo, items: [{key: k, path: p}], defaultMode: 256, optional: true}}, {name: c, secret: {secretName: s, items: [{key: k, path: p}], defaultMode: 256, optional: true}}, {name: d, emptyDir: {medium: Memory, sizeLimit: 1Gi}}, {name: e, hostPath: {path: /var/log, type: Directory}}, {name: f, persistentVolumeClaim: {claimName: c, readOnly: true}}, {name: g, csi: {driver: d.example.com, readOnly: true, fsType: ext4, volumeAttributes: {a: b}, nodePublishSecretRef: {name: s}}}]}"},
	{path: "spec.envoy.extraVolumeMounts", base: "envoy: {extraVolumes: [{name: a, emptyDir: {}}]}", spec: "envoy: {extraVolumes: [{name: a, emptyDir: {}}], extraVolumeMounts: [{name: a, mountPath: /data, readOnly: true, recursiveReadOnly: Disabled, mountPropagation: None, subPath: x}, {name: a, mountPath: /more, subPathExpr: $(POD_NAME)}]}"},
	{path: "spec.envoy.image", spec: "envoy: {image: example.com/envoy:v9}"},
	{path: "spec.envoy.imagePullSecrets", spec: "envoy: {imagePullSecrets: [{name: pull}]}"},
	{path: "spec.envoy.logLevel", spec: "envoy: {logLevel: debug}"},
	{path: "spec.envoy.networkPublishing.externalTrafficPolicy", spec: "envoy: {networkPublishing: {externalTrafficPolicy: Cluster}}"},
	{path: "spec.envoy.networkPublishing.ipFamilyPolicy", spec: "envoy: {networkPublishing: {ipFamilyPolicy: PreferDualStack}}"},
	{path: "spec.envoy.networkPublishing.loadBalancerClass", spec: "envoy: {networkPublishing: {loadBalancerClass: example.com/lb}}"},
	{path: "spec.envoy.networkPublishing.loadBalancerSourceRanges", spec: "envoy: {networkPublishing: {loadBalancerSourceRanges: [10.0.0.0/8]}}"},
	{path: "spec.envoy.networkPublishing.nodePorts", spec: "envoy: {networkPublishing: {nodePorts: [{port: 80, nodePort: 30080}]}}"},
	{path: "spec.envoy.networkPublishing.serviceAnnotations", spec: "envoy: {networkPublishing: {serviceAnnotations: {example.com/lb: internal}}}"},
	{path: "spec.envoy.networkPublishing.type", spec: "envoy: {networkPublishing: {type: NodePortService}}"},
	{path: "spec.envoy.nodePlacement.affinity", spec: "envoy: {nodePlacement: {affinity: {podAntiAffinity: {preferredDuringSchedulingIgnoredDuringExecution: [{weight: 1, podAffinityTerm: {topologyKey: zone, labelSelector: {matchLabels: {a: b}}}}]}}}}"},
	{path: "spec.envoy.nodePlacement.nodeSelector", spec: "envoy: {nodePlacement: {nodeSelector: {pool: edge}}}"},
	{path: "spec.envoy.nodePlacement.tolerations", spec: "envoy: {nodePlacement: {tolerations: [{key: edge, operator: Exists}]}}"},
	{path: "spec.envoy.nodePlacement.topologySpreadConstraints", spec: "envoy: {nodePlacement: {topologySpreadConstraints: [{maxSkew: 1, topologyKey: zone, whenUnsatisfiable: ScheduleAnyway, labelSelector: {matchLabels: {a: b}}, minDomains: 2, nodeAffinityPolicy: Honor, nodeTaintsPolicy: Ignore, matchLabelKeys: [pod-template-hash]}]}}"},
	{path: "spec.envoy.overloadMaxHeapSize", spec: "envoy: {overloadMaxHeapSize: 900Mi}"},
	{path: "spec.envoy.overloadMaxDownstreamConnections", spec: "envoy: {overloadMaxDownstreamConnections: 50000}"},
	{path: "spec.envoy.maxRequestsPerIOCycle", spec: "envoy: {maxRequestsPerIOCycle: 8}"},
	{path: "spec.envoy.omEnforcedHealth", spec: "envoy: {omEnforcedHealth: true}"},
	{path: "spec.envoy.runtime", spec: "envoy: {runtime: {overload.premature_reset_min_stream_lifetime_seconds: '2'}}"},
	{path: "spec.envoy.podAnnotations", spec: "envoy: {podAnnotations: {example.com/a: b}}"},
	{path: "spec.envoy.podDisruptionBudget.maxUnavailable", spec: "envoy: {podDisruptionBudget: {maxUnavailable: 1}}"},
	{path: "spec.envoy.podDisruptionBudget.minAvailable", spec: "envoy: {podDisruptionBudget: {minAvailable: 50%}}"},
	{path: "spec.envoy.podLabels", spec: "envoy: {podLabels: {team: edge}}"},
	{path: "spec.envoy.priorityClassName", spec: "envoy: {priorityClassName: system-node-critical}"},
	{path: "spec.envoy.replicas", base: "envoy: {workloadType: Deployment}", spec: "envoy: {workloadType: Deployment, replicas: 5}"},
	{path: "spec.envoy.resources.limits", spec: "envoy: {resources: {limits: {memory: 1Gi}}}"},
	{path: "spec.envoy.resources.requests", spec: "envoy: {resources: {requests: {cpu: 500m}}}"},
	{path: "spec.envoy.workloadType", spec: "envoy: {workloadType: Deployment}"},

	{path: "spec.gateway.controllerName", spec: "gateway: {controllerName: example.com/static}"},

	{path: "spec.rollout.maxFleets", shownBy: "conformance.TestUpgradeRollsInOrder"},

	{path: "spec.runtimeSettings.accessLog.format", spec: "runtimeSettings: {accessLog: {format: JSON}}"},
	{path: "spec.runtimeSettings.accessLog.jsonFields", base: "runtimeSettings: {accessLog: {format: JSON}}", spec: "runtimeSettings: {accessLog: {format: JSON, jsonFields: ['s=%RESPONSE_CODE%']}}"},
	{path: "spec.runtimeSettings.accessLog.textFormat", spec: "runtimeSettings: {accessLog: {textFormat: \"%RESPONSE_CODE%\\n\"}}"},
	{path: "spec.runtimeSettings.httpproxy.disablePermitInsecure", spec: "runtimeSettings: {httpproxy: {disablePermitInsecure: true}}"},
	{path: "spec.runtimeSettings.httpproxy.policy.requestHeaders", spec: "runtimeSettings: {httpproxy: {policy: {requestHeaders: {set: {X-Env: prod}, remove: [X-Debug]}}}}"},
	{path: "spec.runtimeSettings.httpproxy.policy.responseHeaders", spec: "runtimeSettings: {httpproxy: {policy: {responseHeaders: {set: {X-Frame-Options: DENY}, remove: [X-Powered-By]}}}}"},
	{path: "spec.runtimeSettings.httpproxy.policy.applyToIngress", base: "runtimeSettings: {httpproxy: {policy: {requestHeaders: {set: {X-Env: prod}}}}}", spec: "runtimeSettings: {httpproxy: {policy: {applyToIngress: true, requestHeaders: {set: {X-Env: prod}}}}}"},
	{path: "spec.runtimeSettings.httpproxy.rootNamespaces", spec: "runtimeSettings: {httpproxy: {rootNamespaces: [platform]}}"},
	{path: "spec.runtimeSettings.httpproxy.enableExternalNameService", spec: "runtimeSettings: {httpproxy: {enableExternalNameService: true}}"},
	{path: "spec.runtimeSettings.httpproxy.fallbackCertificate", spec: "runtimeSettings: {httpproxy: {fallbackCertificate: {namespace: $NAMESPACE, name: cert}}}"},
	{path: "spec.runtimeSettings.httpproxy.rateLimitService.extensionService", spec: "runtimeSettings: {httpproxy: {rateLimitService: {extensionService: {namespace: $NAMESPACE, name: ratelimit}}}}"},
	{path: "spec.runtimeSettings.httpproxy.rateLimitService.domain", base: "runtimeSettings: {httpproxy: {rateLimitService: {extensionService: {namespace: $NAMESPACE, name: ratelimit}}}}", spec: "runtimeSettings: {httpproxy: {rateLimitService: {extensionService: {namespace: $NAMESPACE, name: ratelimit}, domain: edge}}}"},
	{path: "spec.runtimeSettings.httpproxy.rateLimitService.failOpen", base: "runtimeSettings: {httpproxy: {rateLimitService: {extensionService: {namespace: $NAMESPACE, name: ratelimit}}}}", spec: "runtimeSettings: {httpproxy: {rateLimitService: {extensionService: {namespace: $NAMESPACE, name: ratelimit}, failOpen: true}}}"},
	{path: "spec.runtimeSettings.httpproxy.rateLimitService.enableXRateLimitHeaders", base: "runtimeSettings: {httpproxy: {rateLimitService: {extensionService: {namespace: $NAMESPACE, name: ratelimit}}}}", spec: "runtimeSettings: {httpproxy: {rateLimitService: {extensionService: {namespace: $NAMESPACE, name: ratelimit}, enableXRateLimitHeaders: true}}}"},
	{path: "spec.runtimeSettings.httpproxy.rateLimitService.enableResourceExhaustedCode", base: "runtimeSettings: {httpproxy: {rateLimitService: {extensionService: {namespace: $NAMESPACE, name: ratelimit}}}}", spec: "runtimeSettings: {httpproxy: {rateLimitService: {extensionService: {namespace: $NAMESPACE, name: ratelimit}, enableResourceExhaustedCode: true}}}"},
	{path: "spec.runtimeSettings.httpproxy.rateLimitService.defaultGlobalRateLimitPolicy", base: "runtimeSettings: {httpproxy: {rateLimitService: {extensionService: {namespace: $NAMESPACE, name: ratelimit}}}}",
		spec: "runtimeSettings: {httpproxy: {rateLimitService: {extensionService: {namespace: $NAMESPACE, name: ratelimit}, defaultGlobalRateLimitPolicy: {disabled: false, descriptors: [{entries: [{genericKey: {key: k, value: v}}, {requestHeader: {headerName: x-user, descriptorKey: user}}, {remoteAddress: {}}, {requestHeaderValueMatch: {headers: [{name: x-plan, exact: free, notexact: x, present: true, notpresent: false, contains: f, notcontains: g, regex: 'f.*', ignoreCase: true, treatMissingAsEmpty: true}], value: free, expectMatch: true}}]}]}}}}"},
	// What Ingresses' status says is not Envoy's configuration; the
	// controller writes it (a test of this package, so "." for the
	// package).
	{path: "spec.runtimeSettings.ingress.statusAddress", shownBy: ".TestIngressStatusAddress"},
	{path: "spec.runtimeSettings.listener.connectionBalancer", spec: "runtimeSettings: {listener: {connectionBalancer: Exact}}"},
	{path: "spec.runtimeSettings.listener.socketOptions", spec: "runtimeSettings: {listener: {socketOptions: {tos: 184, trafficClass: 184}}}"},
	{path: "spec.runtimeSettings.listener.maxConnectionsPerListener", spec: "runtimeSettings: {listener: {maxConnectionsPerListener: 1000}}"},
	{path: "spec.runtimeSettings.accessLog.level", spec: "runtimeSettings: {accessLog: {level: Error}}"},
	{path: "spec.runtimeSettings.listener.useProxyProtocol", spec: "runtimeSettings: {listener: {useProxyProtocol: true}}"},
	{path: "spec.runtimeSettings.listener.perConnectionBufferLimitBytes", spec: "runtimeSettings: {listener: {perConnectionBufferLimitBytes: 65536}}"},
	{path: "spec.runtimeSettings.cluster.circuitBreakers", spec: "runtimeSettings: {cluster: {circuitBreakers: {maxConnections: 50, maxPendingRequests: 60, maxRequests: 70, maxRetries: 5, perHostMaxConnections: 10}}}"},
	{path: "spec.runtimeSettings.cluster.maxRequestsPerConnection", spec: "runtimeSettings: {cluster: {maxRequestsPerConnection: 1000}}"},
	{path: "spec.runtimeSettings.cluster.perConnectionBufferLimitBytes", spec: "runtimeSettings: {cluster: {perConnectionBufferLimitBytes: 65536}}"},
	{path: "spec.runtimeSettings.cluster.dnsLookupFamily", base: "runtimeSettings: {httpproxy: {enableExternalNameService: true}}", spec: "runtimeSettings: {httpproxy: {enableExternalNameService: true}, cluster: {dnsLookupFamily: v4}}"},
	{path: "spec.runtimeSettings.cluster.upstreamTLS", spec: "runtimeSettings: {cluster: {upstreamTLS: {minimumVersion: '1.3', maximumVersion: '1.3', cipherSuites: [ECDHE-RSA-AES256-GCM-SHA384]}}}"},
	{path: "spec.runtimeSettings.http.versions", spec: "runtimeSettings: {http: {versions: [HTTP/1.1]}}"},
	{path: "spec.runtimeSettings.http.compression", spec: "runtimeSettings: {http: {compression: Brotli}}"},
	{path: "spec.runtimeSettings.http.stripTrailingHostDot", spec: "runtimeSettings: {http: {stripTrailingHostDot: true}}"},
	{path: "spec.runtimeSettings.http.allowChunkedLength", spec: "runtimeSettings: {http: {allowChunkedLength: false}}"},
	{path: "spec.runtimeSettings.http.maxRequestsPerConnection", spec: "runtimeSettings: {http: {maxRequestsPerConnection: 100}}"},
	{path: "spec.runtimeSettings.http.http2MaxConcurrentStreams", spec: "runtimeSettings: {http: {http2MaxConcurrentStreams: 64}}"},
	{path: "spec.runtimeSettings.timeouts.request", spec: "runtimeSettings: {timeouts: {request: 30s}}"},
	{path: "spec.runtimeSettings.timeouts.delayedClose", spec: "runtimeSettings: {timeouts: {delayedClose: 0s}}"},
	{path: "spec.runtimeSettings.http.maxRequestHeadersKiB", spec: "runtimeSettings: {http: {maxRequestHeadersKiB: 96}}"},
	{path: "spec.runtimeSettings.http.mergeSlashes", spec: "runtimeSettings: {http: {mergeSlashes: false}}"},
	{path: "spec.runtimeSettings.http.numTrustedHops", spec: "runtimeSettings: {http: {numTrustedHops: 1}}"},
	{path: "spec.runtimeSettings.http.serverHeader", spec: "runtimeSettings: {http: {serverHeader: PassThrough}}"},
	{path: "spec.runtimeSettings.timeouts.connectionIdle", spec: "runtimeSettings: {timeouts: {connectionIdle: 2m}}"},
	{path: "spec.runtimeSettings.timeouts.connectionShutdownGracePeriod", spec: "runtimeSettings: {timeouts: {connectionShutdownGracePeriod: 20s}}"},
	{path: "spec.runtimeSettings.timeouts.maxConnectionDuration", spec: "runtimeSettings: {timeouts: {maxConnectionDuration: 1h}}"},
	{path: "spec.runtimeSettings.timeouts.requestHeaders", spec: "runtimeSettings: {timeouts: {requestHeaders: 30s}}"},
	{path: "spec.runtimeSettings.timeouts.streamIdle", spec: "runtimeSettings: {timeouts: {streamIdle: 1m}}"},
	{path: "spec.runtimeSettings.timeouts.upstreamConnect", spec: "runtimeSettings: {timeouts: {upstreamConnect: 5s}}"},
	{path: "spec.runtimeSettings.tls.cipherSuites", spec: "runtimeSettings: {tls: {cipherSuites: [ECDHE-RSA-AES256-GCM-SHA384]}}"},
	{path: "spec.runtimeSettings.tls.ecdhCurves", spec: "runtimeSettings: {tls: {ecdhCurves: [X25519MLKEM768, X25519]}}"},
	{path: "spec.runtimeSettings.tls.fingerprint.ja3", spec: "runtimeSettings: {tls: {fingerprint: {ja3: true}}}"},
	{path: "spec.runtimeSettings.tls.fingerprint.ja4", spec: "runtimeSettings: {tls: {fingerprint: {ja4: true}}}"},
	{path: "spec.runtimeSettings.tls.maximumVersion", spec: "runtimeSettings: {tls: {maximumVersion: '1.2'}}"},
	{path: "spec.runtimeSettings.tls.minimumVersion", spec: "runtimeSettings: {tls: {minimumVersion: '1.3'}}"},
	{path: "spec.runtimeSettings.globalExtAuth.extensionService", spec: "runtimeSettings: {globalExtAuth: {extensionService: {namespace: $NAMESPACE, name: authz}}}"},
	{path: "spec.runtimeSettings.globalExtAuth.authPolicy.disabled", base: "runtimeSettings: {globalExtAuth: {extensionService: {namespace: $NAMESPACE, name: authz}}}", spec: "runtimeSettings: {globalExtAuth: {extensionService: {namespace: $NAMESPACE, name: authz}, authPolicy: {disabled: true}}}"},
	{path: "spec.runtimeSettings.globalExtAuth.authPolicy.context", base: "runtimeSettings: {globalExtAuth: {extensionService: {namespace: $NAMESPACE, name: authz}}}", spec: "runtimeSettings: {globalExtAuth: {extensionService: {namespace: $NAMESPACE, name: authz}, authPolicy: {context: {team: web}}}}"},
	{path: "spec.runtimeSettings.globalExtAuth.responseTimeout", base: "runtimeSettings: {globalExtAuth: {extensionService: {namespace: $NAMESPACE, name: authz}}}", spec: "runtimeSettings: {globalExtAuth: {extensionService: {namespace: $NAMESPACE, name: authz}, responseTimeout: 3s}}"},
	{path: "spec.runtimeSettings.globalExtAuth.failOpen", base: "runtimeSettings: {globalExtAuth: {extensionService: {namespace: $NAMESPACE, name: authz}}}", spec: "runtimeSettings: {globalExtAuth: {extensionService: {namespace: $NAMESPACE, name: authz}, failOpen: true}}"},
	{path: "spec.runtimeSettings.globalExtAuth.withRequestBody.maxRequestBytes", base: "runtimeSettings: {globalExtAuth: {extensionService: {namespace: $NAMESPACE, name: authz}, withRequestBody: {}}}", spec: "runtimeSettings: {globalExtAuth: {extensionService: {namespace: $NAMESPACE, name: authz}, withRequestBody: {maxRequestBytes: 4096}}}"},
	{path: "spec.runtimeSettings.globalExtAuth.withRequestBody.allowPartialMessage", base: "runtimeSettings: {globalExtAuth: {extensionService: {namespace: $NAMESPACE, name: authz}, withRequestBody: {}}}", spec: "runtimeSettings: {globalExtAuth: {extensionService: {namespace: $NAMESPACE, name: authz}, withRequestBody: {allowPartialMessage: true}}}"},
	{path: "spec.runtimeSettings.globalExtAuth.withRequestBody.packAsBytes", base: "runtimeSettings: {globalExtAuth: {extensionService: {namespace: $NAMESPACE, name: authz}, withRequestBody: {}}}", spec: "runtimeSettings: {globalExtAuth: {extensionService: {namespace: $NAMESPACE, name: authz}, withRequestBody: {packAsBytes: true}}}"},
	{path: "spec.runtimeSettings.tracing.extensionService", spec: "runtimeSettings: {tracing: {extensionService: {namespace: $NAMESPACE, name: otel}}}"},
	{path: "spec.runtimeSettings.tracing.serviceName", base: "runtimeSettings: {tracing: {extensionService: {namespace: $NAMESPACE, name: otel}}}", spec: "runtimeSettings: {tracing: {extensionService: {namespace: $NAMESPACE, name: otel}, serviceName: edge}}"},
	{path: "spec.runtimeSettings.tracing.overallSampling", base: "runtimeSettings: {tracing: {extensionService: {namespace: $NAMESPACE, name: otel}}}", spec: "runtimeSettings: {tracing: {extensionService: {namespace: $NAMESPACE, name: otel}, overallSampling: '25'}}"},
	{path: "spec.runtimeSettings.tracing.clientSampling", base: "runtimeSettings: {tracing: {extensionService: {namespace: $NAMESPACE, name: otel}}}", spec: "runtimeSettings: {tracing: {extensionService: {namespace: $NAMESPACE, name: otel}, clientSampling: '10'}}"},
	{path: "spec.runtimeSettings.tracing.randomSampling", base: "runtimeSettings: {tracing: {extensionService: {namespace: $NAMESPACE, name: otel}}}", spec: "runtimeSettings: {tracing: {extensionService: {namespace: $NAMESPACE, name: otel}, randomSampling: '10'}}"},
	{path: "spec.runtimeSettings.tracing.maxPathTagLength", base: "runtimeSettings: {tracing: {extensionService: {namespace: $NAMESPACE, name: otel}}}", spec: "runtimeSettings: {tracing: {extensionService: {namespace: $NAMESPACE, name: otel}, maxPathTagLength: 64}}"},
	{path: "spec.runtimeSettings.tracing.includePodDetail", base: "runtimeSettings: {tracing: {extensionService: {namespace: $NAMESPACE, name: otel}}}", spec: "runtimeSettings: {tracing: {extensionService: {namespace: $NAMESPACE, name: otel}, includePodDetail: true}}"},
	{path: "spec.runtimeSettings.tracing.customTags", base: "runtimeSettings: {tracing: {extensionService: {namespace: $NAMESPACE, name: otel}}}", spec: "runtimeSettings: {tracing: {extensionService: {namespace: $NAMESPACE, name: otel}, customTags: [{tagName: env, literal: prod}, {tagName: team, requestHeaderName: x-team}]}}"},
	{path: "spec.runtimeSettings.xds.maxUpdateDelay", spec: "runtimeSettings: {xds: {maxUpdateDelay: 5s}}"},
	{path: "spec.runtimeSettings.xds.updateDelay", spec: "runtimeSettings: {xds: {updateDelay: 300ms}}"},
}

// schemaLeaves lists the leaves of the CRD's spec schema: scalars, maps,
// int-or-strings and lists of scalars, with "[]" dropped from list paths.
func schemaLeaves(t *testing.T) []string {
	t.Helper()
	data, err := os.ReadFile("../config/crd/bases/isobar.dev_contourdeployments.yaml")
	if err != nil {
		t.Fatal(err)
	}
	type schema struct {
		Type       string            `json:"type"`
		Properties map[string]schema `json:"properties"`
		Items      *schema           `json:"items"`
	}
	var crd struct {
		Spec struct {
			Versions []struct {
				Schema struct {
					OpenAPIV3Schema schema `json:"openAPIV3Schema"`
				} `json:"schema"`
			} `json:"versions"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(data, &crd); err != nil {
		t.Fatal(err)
	}
	var out []string
	var walk func(s schema, path string)
	walk = func(s schema, path string) {
		switch {
		case len(s.Properties) > 0:
			for k, v := range s.Properties {
				walk(v, path+"."+k)
			}
		case s.Type == "array" && s.Items != nil && len(s.Items.Properties) > 0:
			walk(*s.Items, path)
		default:
			out = append(out, path)
		}
	}
	walk(crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"], "spec")
	slices.Sort(out)
	return out
}

// TestEveryProfileFieldHasAnEffect walks every leaf of the ContourDeployment
// schema. Each value is admitted by the API server (which also applies the
// defaults), then the fleet is rendered and the Envoy configuration
// translated from the stored profile, and compared with those of the base.
func TestEveryProfileFieldHasAnEffect(t *testing.T) {
	covered := map[string]bool{}
	for _, leaf := range schemaLeaves(t) {
		ok := false
		for _, e := range effects {
			if leaf == e.path || strings.HasPrefix(leaf, e.path+".") {
				ok, covered[e.path] = true, true
			}
		}
		if !ok {
			t.Errorf("%s has no value in effects: give it one that takes effect, or remove the field", leaf)
		}
	}
	for _, e := range effects {
		if !covered[e.path] {
			t.Errorf("effects names %s, which is not in the schema", e.path)
		}
	}

	ns := namespace(t)
	fx := newFixture(t, ns)
	for i, e := range effects {
		t.Run(e.path, func(t *testing.T) {
			if e.shownBy != "" {
				checkShownBy(t, e.shownBy)
				return
			}
			// $NAMESPACE is the fixture's, where its objects are.
			base := fx.observe(t, fmt.Sprintf("base-%d", i), strings.ReplaceAll(e.base, "$NAMESPACE", fx.ns))
			got := fx.observe(t, fmt.Sprintf("set-%d", i), strings.ReplaceAll(e.spec, "$NAMESPACE", fx.ns))
			if strings.HasPrefix(e.path, "spec.runtimeSettings.") {
				if got.xds == base.xds && got.batching == base.batching {
					t.Errorf("%s: the Envoy configuration and the controller's batching are the same as without it", e.spec)
				}
				if got.config == base.config {
					t.Errorf("%s: the controller's runtime settings ConfigMap does not carry it", e.spec)
				}
				return
			}
			if got.fleet == base.fleet {
				t.Errorf("%s: the rendered fleet is the same as without it", e.spec)
			}
		})
	}
}

// fixture is a Gateway with a listener of every kind, another with the
// Ingress listeners serving an HTTPProxy, and what the walk observes of a
// profile.
type fixture struct {
	ns      string
	gateway *gatewayv1.Gateway
	input   string // the offline translator's input but the profile
}

type observation struct {
	fleet, config, xds, batching string
}

func newFixture(t *testing.T, ns string) *fixture {
	t.Helper()
	caCert, caKey, err := certs.NewCA("walk", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	crt, key, err := certs.Issue(caCert, caKey, []string{"www.example.com"}, true, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	gw := &gatewayv1.Gateway{
		TypeMeta:   metav1.TypeMeta{APIVersion: "gateway.networking.k8s.io/v1", Kind: "Gateway"},
		ObjectMeta: metav1.ObjectMeta{Name: "walk", Namespace: ns, UID: "walk-uid"},
		Spec: gatewayv1.GatewaySpec{GatewayClassName: "walk", Listeners: []gatewayv1.Listener{
			{Name: "http", Protocol: gatewayv1.HTTPProtocolType, Port: 80},
			{Name: "https", Protocol: gatewayv1.HTTPSProtocolType, Port: 443, Hostname: ptr.To(gatewayv1.Hostname("www.example.com")),
				TLS: &gatewayv1.ListenerTLSConfig{CertificateRefs: []gatewayv1.SecretObjectReference{{Name: "cert"}}}},
			{Name: "tcp", Protocol: gatewayv1.TCPProtocolType, Port: 5432},
			{Name: "udp", Protocol: gatewayv1.UDPProtocolType, Port: 53},
		}},
	}
	gwYAML, err := yaml.Marshal(gw)
	if err != nil {
		t.Fatal(err)
	}
	secret := &corev1.Secret{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{Name: "cert", Namespace: ns},
		Type:       corev1.SecretTypeTLS,
		Data:       map[string][]byte{"tls.crt": crt, "tls.key": key},
	}
	secretYAML, err := yaml.Marshal(secret)
	if err != nil {
		t.Fatal(err)
	}
	input := fmt.Sprintf(`apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: walk}
spec:
  controllerName: %[2]s
  parametersRef: {group: isobar.dev, kind: ContourDeployment, namespace: %[1]s, name: profile}
---
%[3]s
---
%[4]s
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: web, namespace: %[1]s}
spec:
  parentRefs: [{name: walk}]
  rules: [{backendRefs: [{name: app, port: 80}]}]
---
apiVersion: gateway.networking.k8s.io/v1alpha2
kind: TCPRoute
metadata: {name: db, namespace: %[1]s}
spec:
  parentRefs: [{name: walk, sectionName: tcp}]
  rules: [{backendRefs: [{name: app, port: 5432}]}]
---
apiVersion: gateway.networking.k8s.io/v1alpha2
kind: UDPRoute
metadata: {name: dns, namespace: %[1]s}
spec:
  parentRefs: [{name: walk, sectionName: udp}]
  rules: [{backendRefs: [{name: dns, port: 53}]}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: walk-ingress, namespace: %[1]s}
spec:
  gatewayClassName: walk
  listeners:
  - {name: ingress-http, protocol: HTTP, port: 80}
  - {name: ingress-https, protocol: HTTPS, port: 443, tls: {certificateRefs: [{name: cert}]}}
---
apiVersion: networking.k8s.io/v1
kind: IngressClass
metadata: {name: walk}
spec:
  controller: %[2]s
  parameters: {apiGroup: gateway.networking.k8s.io, kind: Gateway, name: walk-ingress, namespace: %[1]s, scope: Namespace}
---
apiVersion: projectcontour.io/v1
kind: HTTPProxy
metadata: {name: www, namespace: %[1]s}
spec:
  ingressClassName: walk
  virtualhost: {fqdn: www.example.com, tls: {secretName: cert}}
  routes:
  - services: [{name: app, port: 80}]
  - conditions: [{prefix: /public}]
    permitInsecure: true
    services: [{name: app, port: 80}]
  - conditions: [{prefix: /secure}]
    services: [{name: app, port: 80, protocol: tls}]
---
apiVersion: projectcontour.io/v1
kind: HTTPProxy
metadata: {name: fallback, namespace: %[1]s}
spec:
  ingressClassName: walk
  virtualhost: {fqdn: fallback.example.com, tls: {secretName: cert, enableFallbackCertificate: true}}
  routes:
  - services: [{name: app, port: 80}]
---
apiVersion: projectcontour.io/v1
kind: HTTPProxy
metadata: {name: ext, namespace: %[1]s}
spec:
  ingressClassName: walk
  virtualhost: {fqdn: ext.example.com}
  routes:
  - services: [{name: external, port: 80}]
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: shop, namespace: %[1]s}
spec:
  ingressClassName: walk
  rules: [{host: shop.example.com, http: {paths: [{path: /, pathType: Prefix, backend: {service: {name: app, port: {number: 80}}}}]}}]
---
apiVersion: v1
kind: Service
metadata: {name: external, namespace: %[1]s}
spec: {type: ExternalName, externalName: backend.example.net, ports: [{name: http, port: 80}]}
---
apiVersion: v1
kind: Service
metadata: {name: app, namespace: %[1]s}
spec: {ports: [{name: http, port: 80}, {name: db, port: 5432}]}
---
apiVersion: v1
kind: Service
metadata: {name: dns, namespace: %[1]s}
spec: {ports: [{name: dns, port: 53, protocol: UDP}]}
`, ns, offline.DefaultControllerName, gwYAML, secretYAML)
	return &fixture{ns: ns, gateway: gw, input: input}
}

// observe creates a profile from spec on the API server, reads it back
// with its defaults, and renders and translates from it.
func (fx *fixture) observe(t *testing.T, name, spec string) observation {
	t.Helper()
	if spec == "" {
		spec = "{}"
	}
	if err := createProfile(t, fx.ns, name, spec); err != nil {
		t.Fatalf("the API server refused %s: %v", spec, err)
	}
	cd := &v1alpha1.ContourDeployment{}
	ctx, cancel := harness.Context()
	defer cancel()
	if err := env.Client.Get(ctx, keyOf(fx.ns, name), cd); err != nil {
		t.Fatal(err)
	}
	var o observation

	in := render.Input{Gateway: fx.gateway, ControllerName: offline.DefaultControllerName, Spec: cd.Spec, NodePortRange: render.DefaultNodePortRange}
	if cd.Spec.Gateway != nil {
		// A static fleet, as the static reconciler renders it.
		in.Static, in.ControllerName = true, cd.Spec.Gateway.ControllerName
	}
	f, err := render.Render(in)
	if err != nil {
		t.Fatalf("rendering %s: %v", spec, err)
	}
	var fleetJSON bytes.Buffer
	for _, obj := range append(f.Namespaced, f.ClusterScoped...) {
		if cm, ok := obj.(*corev1.ConfigMap); ok && cm.Name == f.Names.ControllerConfig {
			o.config = fmt.Sprint(cm.Data)
			continue
		}
		js, err := json.Marshal(obj)
		if err != nil {
			t.Fatal(err)
		}
		// The runtime settings' hash rolls the controller's pods; it is
		// the ConfigMap's effect, not one of its own.
		fleetJSON.Write(bytes.ReplaceAll(js, []byte(render.ConfigHashAnnotation), nil))
	}
	o.fleet = fleetJSON.String()

	profile := cd.DeepCopy()
	profile.Name, profile.TypeMeta = "profile", metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "ContourDeployment"}
	profile.ManagedFields = nil
	profileYAML, err := yaml.Marshal(profile)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	file := dir + "/in.yaml"
	if err := os.WriteFile(file, []byte(fx.input+"---\n"+string(profileYAML)), 0o600); err != nil {
		t.Fatal(err)
	}
	res, _, err := offline.LoadFiles([]string{file}, "")
	if err != nil {
		t.Fatal(err)
	}
	result, err := offline.Translate(res, offline.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(result.Notes) > 0 {
		t.Fatalf("translating with %s: %v", spec, result.Notes)
	}
	for _, typ := range []string{"listeners", "routes", "clusters", "runtime"} {
		rendered, err := offline.Render(result, typ, "yaml")
		if err != nil {
			t.Fatal(err)
		}
		o.xds += string(rendered)
	}

	opts := controllerserve.DefaultOptions()
	if _, err := opts.ApplyRuntimeSettings(cd.Spec.RuntimeSettings); err != nil {
		t.Fatal(err)
	}
	o.batching = fmt.Sprint(opts.UpdateDelay, opts.MaxUpdateDelay)
	return o
}

// checkShownBy fails unless the test name ("package.TestName") is in the
// package's directory of this module.
func checkShownBy(t *testing.T, name string) {
	t.Helper()
	pkg, test, ok := strings.Cut(name, ".")
	if !ok {
		t.Fatalf("shownBy %q is not package.TestName", name)
	}
	files, err := filepath.Glob(filepath.Join(cmp.Or(pkg, "."), "*_test.go"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(data, []byte("func "+test+"(t *testing.T)")) {
			return
		}
	}
	t.Errorf("no test %s in %s", test, pkg)
}
