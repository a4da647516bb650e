package e2e

import (
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	isobarv1alpha1 "isobar.dev/api/v1alpha1"
	"isobar.dev/e2e/harness"
)

// createProfile creates a ContourDeployment with the given spec (YAML) and
// returns the API server's error, if any.
func createProfile(t *testing.T, ns, name, spec string) error {
	t.Helper()
	var specMap map[string]any
	if err := yaml.Unmarshal([]byte(spec), &specMap); err != nil {
		t.Fatalf("test spec is not YAML: %v", err)
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": isobarv1alpha1.GroupVersion.String(),
		"kind":       "ContourDeployment",
		"metadata":   map[string]any{"name": name, "namespace": ns},
	}}
	if specMap != nil {
		u.Object["spec"] = specMap
	}
	ctx, cancel := harness.Context()
	defer cancel()
	return env.Client.Create(ctx, u)
}

// An empty profile is complete: the API server fills in every default the
// operator relies on.
func TestContourDeploymentDefaults(t *testing.T) {
	ns := namespace(t)
	for name, spec := range map[string]string{
		"no-spec":      "",
		"empty-spec":   "{}",
		"empty-fields": "envoy: {}\nruntimeSettings: {}",
	} {
		if err := createProfile(t, ns, name, spec); err != nil {
			t.Fatalf("spec %q: %v", spec, err)
		}
		got := &isobarv1alpha1.ContourDeployment{}
		ctx, cancel := harness.Context()
		err := env.Client.Get(ctx, keyOf(ns, name), got)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		s := got.Spec
		checks := []struct {
			field     string
			got, want any
		}{
			{"controller.replicas", deref(s.Controller.Replicas), int32(2)},
			{"controller.logLevel", s.Controller.LogLevel, isobarv1alpha1.ControllerLogInfo},
			{"envoy.workloadType", s.Envoy.WorkloadType, isobarv1alpha1.WorkloadTypeDaemonSet},
			{"envoy.replicas", s.Envoy.Replicas == nil, true},
			{"envoy.logLevel", s.Envoy.LogLevel, isobarv1alpha1.EnvoyLogInfo},
			{"envoy.drain.timeout", durationOf(s.Envoy.Drain.Timeout), time.Minute},
			{"envoy.drain.minDuration", durationOf(s.Envoy.Drain.MinDuration), 5 * time.Second},
			{"envoy.drain.strategy", s.Envoy.Drain.Strategy, isobarv1alpha1.DrainGradual},
			{"envoy.networkPublishing.type", s.Envoy.NetworkPublishing.Type, isobarv1alpha1.LoadBalancerServicePublishing},
			{"runtimeSettings.xds.updateDelay", durationOf(s.RuntimeSettings.XDS.UpdateDelay), 100 * time.Millisecond},
			{"runtimeSettings.xds.maxUpdateDelay", durationOf(s.RuntimeSettings.XDS.MaxUpdateDelay), time.Second},
			{"runtimeSettings.http.serverHeader", s.RuntimeSettings.HTTP.ServerHeader, "Overwrite"},
			{"runtimeSettings.http.maxRequestHeadersKiB", deref(s.RuntimeSettings.HTTP.MaxRequestHeadersKiB), int32(60)},
			{"runtimeSettings.timeouts.connectionIdle", durationOf(s.RuntimeSettings.Timeouts.ConnectionIdle), time.Minute},
			{"runtimeSettings.timeouts.streamIdle", durationOf(s.RuntimeSettings.Timeouts.StreamIdle), 5 * time.Minute},
			{"runtimeSettings.timeouts.upstreamConnect", durationOf(s.RuntimeSettings.Timeouts.UpstreamConnect), 2 * time.Second},
			{"runtimeSettings.tls.minimumVersion", s.RuntimeSettings.TLS.MinimumVersion, "1.2"},
			{"runtimeSettings.tls.maximumVersion", s.RuntimeSettings.TLS.MaximumVersion, "1.3"},
			{"runtimeSettings.accessLog.format", s.RuntimeSettings.AccessLog.Format, "Text"},
		}
		for _, c := range checks {
			if c.got != c.want {
				t.Errorf("spec %q: %s = %v, want %v", spec, c.field, c.got, c.want)
			}
		}
	}
}

// Every bad profile is refused by the API server itself, with a message that
// names the field and says what to do.
func TestContourDeploymentValidation(t *testing.T) {
	ns := namespace(t)
	for _, tc := range []struct {
		name, spec string
		want       []string // substrings of the API server's message
	}{
		{
			name: "replicas with a DaemonSet",
			spec: "envoy: {replicas: 3}",
			want: []string{"spec.envoy", "replicas may only be set when workloadType is Deployment"},
		},
		{
			name: "unknown workload type",
			spec: "envoy: {workloadType: StatefulSet}",
			want: []string{"spec.envoy.workloadType", `Unsupported value: "StatefulSet"`, `"DaemonSet", "Deployment"`},
		},
		{
			name: "no control plane replicas",
			spec: "controller: {replicas: 0}",
			want: []string{"spec.controller.replicas", "greater than or equal to 1"},
		},
		{
			name: "unknown controller log level",
			spec: "controller: {logLevel: verbose}",
			want: []string{"spec.controller.logLevel", `Unsupported value: "verbose"`},
		},
		{
			name: "externalTrafficPolicy on a ClusterIP Service",
			spec: "envoy: {networkPublishing: {type: ClusterIPService, externalTrafficPolicy: Local}}",
			want: []string{"spec.envoy.networkPublishing", "externalTrafficPolicy applies only to LoadBalancerService and NodePortService"},
		},
		{
			name: "loadBalancerClass on a NodePort Service",
			spec: "envoy: {networkPublishing: {type: NodePortService, loadBalancerClass: example.com/lb}}",
			want: []string{"spec.envoy.networkPublishing", "loadBalancerClass and loadBalancerSourceRanges apply only to LoadBalancerService"},
		},
		{
			name: "nodePorts on a ClusterIP Service",
			spec: "envoy: {networkPublishing: {type: ClusterIPService, nodePorts: [{port: 80, nodePort: 30080}]}}",
			want: []string{"spec.envoy.networkPublishing", "nodePorts apply only to NodePortService and LoadBalancerService"},
		},
		{
			name: "one nodePort for two listener ports",
			spec: "envoy: {networkPublishing: {type: NodePortService, nodePorts: [{port: 80, nodePort: 30080}, {port: 443, nodePort: 30080}]}}",
			want: []string{"spec.envoy.networkPublishing.nodePorts", "each nodePort may be used by one listener port only"},
		},
		{
			name: "two nodePorts for one listener port",
			spec: "envoy: {networkPublishing: {type: NodePortService, nodePorts: [{port: 80, nodePort: 30080}, {port: 80, nodePort: 30081}]}}",
			want: []string{"spec.envoy.networkPublishing.nodePorts[1]", "Duplicate value"},
		},
		{
			name: "listener port out of range",
			spec: "envoy: {networkPublishing: {type: NodePortService, nodePorts: [{port: 70000, nodePort: 30080}]}}",
			want: []string{"spec.envoy.networkPublishing.nodePorts[0].port", "less than or equal to 65535"},
		},
		{
			name: "bad source range",
			spec: "envoy: {networkPublishing: {loadBalancerSourceRanges: [10.0.0.0/33]}}",
			want: []string{"spec.envoy.networkPublishing.loadBalancerSourceRanges[0]", "must be a CIDR"},
		},
		{
			name: "mount of an unknown volume",
			spec: "envoy: {extraVolumeMounts: [{name: logs, mountPath: /var/log/envoy}]}",
			want: []string{"spec.envoy", "every extraVolumeMounts[].name must name one of extraVolumes"},
		},
		{
			name: "volume with two sources",
			spec: "envoy: {extraVolumes: [{name: cfg, emptyDir: {}, configMap: {name: cfg}}]}",
			want: []string{"spec.envoy.extraVolumes[0]", "set exactly one of configMap, secret, emptyDir"},
		},
		{
			name: "volume with no source",
			spec: "envoy: {extraVolumes: [{name: cfg}]}",
			want: []string{"spec.envoy.extraVolumes[0]", "set exactly one of"},
		},
		{
			name: "reserved volume name",
			spec: "envoy: {extraVolumes: [{name: isobar-certs, emptyDir: {}}]}",
			want: []string{"spec.envoy.extraVolumes[0].name", "reserved for the operator"},
		},
		{
			name: "mount over the operator's files",
			spec: "envoy: {extraVolumes: [{name: x, emptyDir: {}}], extraVolumeMounts: [{name: x, mountPath: /var/run/isobar/certs}]}",
			want: []string{"spec.envoy.extraVolumeMounts", "may not mount below /var/run/isobar"},
		},
		{
			name: "drain shorter than its minimum",
			spec: "envoy: {drain: {timeout: 10s, minDuration: 30s}}",
			want: []string{"spec.envoy.drain", "minDuration must not be longer than timeout"},
		},
		{
			name: "drain too long",
			spec: "envoy: {drain: {timeout: 2h}}",
			want: []string{"spec.envoy.drain.timeout", "timeout must be at most 1h"},
		},
		{
			name: "drain timeout that is not a duration",
			spec: "envoy: {drain: {timeout: ten seconds}}",
			want: []string{"spec.envoy.drain.timeout", "should match"},
		},
		{
			name: "both PDB limits",
			spec: "envoy: {podDisruptionBudget: {minAvailable: 1, maxUnavailable: 1}}",
			want: []string{"spec.envoy.podDisruptionBudget", "set exactly one of minAvailable and maxUnavailable"},
		},
		{
			name: "pod label that would break the selector",
			spec: "envoy: {podLabels: {app.kubernetes.io/component: mine}}",
			want: []string{"spec.envoy", "podLabels may not set app.kubernetes.io/managed-by"},
		},
		{
			name: "no heap",
			spec: "envoy: {overloadMaxHeapSize: '0'}",
			want: []string{"spec.envoy.overloadMaxHeapSize", "overloadMaxHeapSize must be greater than zero"},
		},
		{
			name: "no connections",
			spec: "envoy: {overloadMaxDownstreamConnections: 0}",
			want: []string{"spec.envoy.overloadMaxDownstreamConnections", "should be greater than or equal to 1"},
		},
		{
			name: "a runtime key the profile sets elsewhere",
			spec: "envoy: {runtime: {http.max_requests_per_io_cycle: '1'}}",
			want: []string{"spec.envoy.runtime", "set http.max_requests_per_io_cycle with maxRequestsPerIOCycle"},
		},
		{
			name: "global authorization without a positive timeout",
			spec: "runtimeSettings: {globalExtAuth: {extensionService: {namespace: a, name: b}, responseTimeout: 0s}}",
			want: []string{"spec.runtimeSettings.globalExtAuth.responseTimeout", "responseTimeout must be positive"},
		},
		{
			name: "global authorization context with an empty key",
			spec: "runtimeSettings: {globalExtAuth: {extensionService: {namespace: a, name: b}, authPolicy: {context: {'': x}}}}",
			want: []string{"spec.runtimeSettings.globalExtAuth.authPolicy.context", "context keys must be 1 to 256 characters"},
		},
		{
			name: "TLS versions upside down",
			spec: "runtimeSettings: {tls: {minimumVersion: '1.3', maximumVersion: '1.2'}}",
			want: []string{"spec.runtimeSettings.tls", "minimumVersion must not be greater than maximumVersion"},
		},
		{
			name: "unknown cipher suite",
			spec: "runtimeSettings: {tls: {cipherSuites: [RC4-MD5]}}",
			want: []string{"spec.runtimeSettings.tls.cipherSuites[0]", `Unsupported value: "RC4-MD5"`},
		},
		{
			name: "text format for JSON logs",
			spec: "runtimeSettings: {accessLog: {format: JSON, textFormat: '%RESPONSE_CODE%'}}",
			want: []string{"spec.runtimeSettings.accessLog", "textFormat applies only to format Text"},
		},
		{
			name: "JSON field without an operator",
			spec: "runtimeSettings: {accessLog: {format: JSON, jsonFields: [method]}}",
			want: []string{"spec.runtimeSettings.accessLog.jsonFields[0]", "should match"},
		},
		{
			name: "update delay longer than its bound",
			spec: "runtimeSettings: {xds: {updateDelay: 2s, maxUpdateDelay: 1s}}",
			want: []string{"spec.runtimeSettings.xds", "updateDelay must not be longer than maxUpdateDelay"},
		},
		{
			name: "no upstream connect time",
			spec: "runtimeSettings: {timeouts: {upstreamConnect: 0s}}",
			want: []string{"spec.runtimeSettings.timeouts.upstreamConnect", "upstreamConnect must be greater than zero"},
		},
		{
			name: "PDB limit that is not a percentage",
			spec: "envoy: {podDisruptionBudget: {maxUnavailable: half}}",
			want: []string{"spec.envoy.podDisruptionBudget.maxUnavailable", "maxUnavailable must be a count (0 or more) or a percentage from 0% to 100%"},
		},
		{
			name: "PDB percentage above 100",
			spec: "envoy: {podDisruptionBudget: {minAvailable: 150%}}",
			want: []string{"spec.envoy.podDisruptionBudget.minAvailable", "percentage from 0% to 100%"},
		},
		{
			name: "negative PDB count",
			spec: "envoy: {podDisruptionBudget: {minAvailable: -1}}",
			want: []string{"spec.envoy.podDisruptionBudget.minAvailable", "a count (0 or more)"},
		},
		{
			name: "pod label value with a space",
			spec: "envoy: {podLabels: {team: 'web team'}}",
			want: []string{"spec.envoy.podLabels.team", "should match"},
		},
		{
			name: "bad node selector value",
			spec: "envoy: {nodePlacement: {nodeSelector: {zone: 'a b'}}}",
			want: []string{"spec.envoy.nodePlacement.nodeSelector.zone", "should match"},
		},
		{
			name: "memory request above its limit",
			spec: "envoy: {resources: {requests: {memory: 2Gi}, limits: {memory: 1Gi}}}",
			want: []string{"spec.envoy.resources", "requests.memory must be at most limits.memory"},
		},
		{
			name: "control plane CPU request above its limit",
			spec: "controller: {resources: {requests: {cpu: '2'}, limits: {cpu: 500m}}}",
			want: []string{"spec.controller.resources", "requests.cpu must be at most limits.cpu"},
		},
		{
			name: "invalid priority class name",
			spec: "envoy: {priorityClassName: Critical_Pods}",
			want: []string{"spec.envoy.priorityClassName", "should match"},
		},
		{
			name: "heap at the memory limit",
			spec: "envoy: {overloadMaxHeapSize: 1Gi, resources: {limits: {memory: 1Gi}}}",
			want: []string{"spec.envoy", "overloadMaxHeapSize must be below resources.limits.memory"},
		},
		{
			name: "stray percent in the text format",
			spec: "runtimeSettings: {accessLog: {format: Text, textFormat: '100% %RESPONSE_CODE%'}}",
			want: []string{"spec.runtimeSettings.accessLog.textFormat", "should match"},
		},
		{
			name: "unterminated operator in a JSON field",
			spec: "runtimeSettings: {accessLog: {format: JSON, jsonFields: ['status=%RESPONSE_CODE']}}",
			want: []string{"spec.runtimeSettings.accessLog.jsonFields[0]", "should match"},
		},
		{
			name: "JSON key twice",
			spec: "runtimeSettings: {accessLog: {format: JSON, jsonFields: ['s=%RESPONSE_CODE%', 's=%DURATION%']}}",
			want: []string{"spec.runtimeSettings.accessLog.jsonFields", "each jsonFields key may appear once"},
		},
		{
			name: "image with a space",
			spec: "envoy: {image: 'envoyproxy/envoy: v1.36'}",
			want: []string{"spec.envoy.image", "should match"},
		},
		{
			name: "rate limit domain with a control character",
			spec: "runtimeSettings: {httpproxy: {rateLimitService: {extensionService: {namespace: rl, name: rl}, domain: \"a\\tb\"}}}",
			want: []string{"spec.runtimeSettings.httpproxy.rateLimitService.domain", "should match"},
		},
		{
			name: "rate limit service without a name",
			spec: "runtimeSettings: {httpproxy: {rateLimitService: {extensionService: {namespace: rl}}}}",
			want: []string{"spec.runtimeSettings.httpproxy.rateLimitService.extensionService.name", "Required"},
		},
		{
			name: "tracing sampling above 100",
			spec: "runtimeSettings: {tracing: {extensionService: {namespace: o, name: otel}, overallSampling: '101'}}",
			want: []string{"spec.runtimeSettings.tracing.overallSampling", "should match"},
		},
		{
			name: "tracing tag with a literal and a header",
			spec: "runtimeSettings: {tracing: {extensionService: {namespace: o, name: otel}, customTags: [{tagName: t, literal: a, requestHeaderName: x-a}]}}",
			want: []string{"exactly one of literal and requestHeaderName"},
		},
		{
			name: "tracing tag without a value",
			spec: "runtimeSettings: {tracing: {extensionService: {namespace: o, name: otel}, customTags: [{tagName: t}]}}",
			want: []string{"exactly one of literal and requestHeaderName"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := createProfile(t, ns, "invalid", tc.spec)
			if err == nil {
				t.Fatalf("the API server accepted %s", tc.spec)
			}
			t.Logf("refused: %v", err)
			for _, want := range tc.want {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q\ndoes not contain %q", err, want)
				}
			}
		})
	}
}

// Valid profiles that stretch the schema: each field in its other forms.
func TestContourDeploymentAccepted(t *testing.T) {
	ns := namespace(t)
	for name, spec := range map[string]string{
		"heap-as-integer":   "envoy: {overloadMaxHeapSize: 1073741824}",
		"nodeport-pinned":   "envoy: {networkPublishing: {type: NodePortService, externalTrafficPolicy: Cluster, nodePorts: [{port: 80, nodePort: 30080}, {port: 443, nodePort: 30443}]}}",
		"deployment":        "envoy: {workloadType: Deployment, replicas: 0}",
		"volumes":           "envoy: {extraVolumes: [{name: geoip, configMap: {name: geoip}}, {name: tmp, emptyDir: {medium: Memory}}], extraVolumeMounts: [{name: geoip, mountPath: /etc/geoip, readOnly: true}, {name: tmp, mountPath: /tmp}]}",
		"lb-options":        "envoy: {networkPublishing: {loadBalancerClass: example.com/internal, loadBalancerSourceRanges: [10.0.0.0/8, '2001:db8::/32'], ipFamilyPolicy: PreferDualStack, serviceAnnotations: {example.com/internal: 'true'}}}",
		"tls13-only":        "runtimeSettings: {tls: {minimumVersion: '1.3', maximumVersion: '1.3'}}",
		"json-logs":         "runtimeSettings: {accessLog: {format: JSON, jsonFields: ['status=%RESPONSE_CODE%']}}",
		"percent-pdb":       "envoy: {podDisruptionBudget: {maxUnavailable: 10%}}",
		"drain-immediately": "envoy: {drain: {timeout: 0s, minDuration: 0s, strategy: Immediate}}",
		"labels":            "envoy: {podLabels: {example.com/team: web-1, tier: ''}, podAnnotations: {example.com/a.b_c: 'any value at all'}, nodePlacement: {nodeSelector: {topology.kubernetes.io/zone: eu-1a}}}",
		"requests-limits":   "envoy: {resources: {requests: {memory: 512Mi, cpu: 250m}, limits: {memory: 1Gi}}, overloadMaxHeapSize: 900Mi}",
		"heap-no-limit":     "envoy: {overloadMaxHeapSize: 2Gi, resources: {requests: {memory: 1Gi}}}",
		"pdb-full-range":    "envoy: {podDisruptionBudget: {minAvailable: 100%}}",
		"pdb-zero":          "envoy: {podDisruptionBudget: {maxUnavailable: 0}}",
		"text-format":       "runtimeSettings: {accessLog: {format: Text, textFormat: \"%START_TIME(%Y/%m/%d %s)% %REQ(USER-AGENT):20% done\\n\"}}",
		"priority":          "envoy: {priorityClassName: system-node-critical}",
	} {
		if err := createProfile(t, ns, name, spec); err != nil {
			t.Errorf("%s: the API server refused %s: %v", name, spec, err)
		}
	}
}

// The status subresource is separate from the spec: the operator writes
// status without bumping the generation, and users cannot set status
// through the main resource.
func TestContourDeploymentStatus(t *testing.T) {
	ns := namespace(t)
	if err := createProfile(t, ns, "status", ""); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := harness.Context()
	defer cancel()
	cd := &isobarv1alpha1.ContourDeployment{}
	if err := env.Client.Get(ctx, keyOf(ns, "status"), cd); err != nil {
		t.Fatal(err)
	}
	generation := cd.Generation
	meta.SetStatusCondition(&cd.Status.Conditions, metav1.Condition{
		Type: isobarv1alpha1.ConditionAccepted, Status: metav1.ConditionTrue,
		Reason: isobarv1alpha1.ReasonAccepted, Message: "in use", ObservedGeneration: generation,
	})
	cd.Status.ObservedGeneration = generation
	cd.Status.GatewayClasses = []string{"isobar"}
	cd.Status.Gateways = []isobarv1alpha1.GatewayReference{{Namespace: ns, Name: "web"}}
	cd.Status.GatewayCount = 1
	if err := env.Client.Status().Update(ctx, cd); err != nil {
		t.Fatalf("updating status: %v", err)
	}
	got := &isobarv1alpha1.ContourDeployment{}
	if err := env.Client.Get(ctx, keyOf(ns, "status"), got); err != nil {
		t.Fatal(err)
	}
	if got.Generation != generation {
		t.Errorf("a status update changed the generation from %d to %d", generation, got.Generation)
	}
	if !meta.IsStatusConditionTrue(got.Status.Conditions, isobarv1alpha1.ConditionAccepted) || got.Status.GatewayCount != 1 {
		t.Errorf("status not stored: %+v", got.Status)
	}

	// An update of the main resource ignores status.
	got.Status.GatewayCount = 7
	got.Spec.Envoy.LogLevel = isobarv1alpha1.EnvoyLogDebug
	if err := env.Client.Update(ctx, got); err != nil {
		t.Fatal(err)
	}
	if got.Status.GatewayCount != 1 || got.Generation != generation+1 {
		t.Errorf("after a spec update: gatewayCount %d (want 1), generation %d (want %d)", got.Status.GatewayCount, got.Generation, generation+1)
	}
}
