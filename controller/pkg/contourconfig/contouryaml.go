package contourconfig

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	contourv1alpha1 "github.com/projectcontour/contour/apis/projectcontour/v1alpha1"
	"github.com/projectcontour/contour/pkg/config"
	"sigs.k8s.io/yaml"
)

// contourYAML maps the keys of Contour's contour.yaml (the configuration
// file of a Contour without the ContourConfiguration CRD) to the fields
// of ContourConfiguration they became. camel renames the keys under it
// from the file's kebab-case; nsName turns "namespace/name" into an
// object.
var contourYAML = []struct {
	file, config  string
	camel, nsName bool
	// why, for a key of the file alone, is why it is not carried.
	why string
}{
	{file: "incluster", why: kubeClient},
	{file: "kubeconfig", why: kubeClient},
	{file: "kubernetesClientQPS", why: kubeClient},
	{file: "kubernetesClientBurst", why: kubeClient},
	{file: "debug", config: "debug"},
	{file: "server", config: "xdsServer"},
	{file: "gateway", config: "gateway"},
	{file: "ingress-status-address", config: "ingress.statusAddress"},
	{file: "accesslog-format", config: "envoy.logging.accessLogFormat"},
	{file: "accesslog-format-string", config: "envoy.logging.accessLogFormatString"},
	{file: "json-fields", config: "envoy.logging.accessLogJSONFields"},
	{file: "accesslog-level", config: "envoy.logging.accessLogLevel"},
	{file: "tls.minimum-protocol-version", config: "envoy.listener.tls.minimumProtocolVersion"},
	{file: "tls.maximum-protocol-version", config: "envoy.listener.tls.maximumProtocolVersion"},
	{file: "tls.cipher-suites", config: "envoy.listener.tls.cipherSuites"},
	{file: "tls.fallback-certificate", config: "httpproxy.fallbackCertificate"},
	{file: "tls.envoy-client-certificate", config: "envoy.clientCertificate"},
	{file: "disablePermitInsecure", config: "httpproxy.disablePermitInsecure"},
	{file: "disableAllowChunkedLength", config: "envoy.listener.disableAllowChunkedLength"},
	{file: "disableMergeSlashes", config: "envoy.listener.disableMergeSlashes"},
	{file: "compression", config: "envoy.listener.compression"},
	{file: "serverHeaderTransformation", config: "envoy.listener.serverHeaderTransformation"},
	{file: "enableExternalNameService", config: "enableExternalNameService"},
	{file: "timeouts", config: "envoy.timeouts", camel: true},
	{file: "policy.request-headers", config: "policy.requestHeaders"},
	{file: "policy.response-headers", config: "policy.responseHeaders"},
	{file: "policy.applyToIngress", config: "policy.applyToIngress"},
	{file: "envoy-service-namespace", config: "envoy.service.namespace"},
	{file: "envoy-service-name", config: "envoy.service.name"},
	{file: "default-http-versions", config: "envoy.defaultHTTPVersions"},
	{file: "cluster.dns-lookup-family", config: "envoy.cluster.dnsLookupFamily"},
	{file: "cluster.max-requests-per-connection", config: "envoy.cluster.maxRequestsPerConnection"},
	{file: "cluster.per-connection-buffer-limit-bytes", config: "envoy.cluster.per-connection-buffer-limit-bytes"},
	{file: "cluster.circuit-breakers", config: "envoy.cluster.circuitBreakers", camel: true},
	{file: "cluster.upstream-tls", config: "envoy.cluster.upstreamTLS", camel: true},
	{file: "network.num-trusted-hops", config: "envoy.network.numTrustedHops"},
	{file: "network.admin-port", config: "envoy.network.adminPort"},
	{file: "network.strip-trailing-host-dot", config: "envoy.network.stripTrailingHostDot"},
	{file: "listener.connection-balancer", config: "envoy.listener.connectionBalancer"},
	{file: "listener.max-requests-per-connection", config: "envoy.listener.maxRequestsPerConnection"},
	{file: "listener.per-connection-buffer-limit-bytes", config: "envoy.listener.per-connection-buffer-limit-bytes"},
	{file: "listener.socket-options", config: "envoy.listener.socketOptions", camel: true},
	{file: "listener.max-requests-per-io-cycle", config: "envoy.listener.maxRequestsPerIOCycle"},
	{file: "listener.http2-max-concurrent-streams", config: "envoy.listener.httpMaxConcurrentStreams"},
	{file: "listener.max-connections-per-listener", config: "envoy.listener.maxConnectionsPerListener"},
	{file: "rateLimitService.extensionService", config: "rateLimitService.extensionService", nsName: true},
	{file: "rateLimitService", config: "rateLimitService"},
	{file: "globalExtAuth.extensionService", config: "globalExtAuth.extensionRef", nsName: true},
	{file: "globalExtAuth", config: "globalExtAuth"},
	{file: "metrics", config: "metrics"},
	{file: "tracing.extensionService", config: "tracing.extensionService", nsName: true},
	{file: "tracing", config: "tracing"},
	{file: "featureFlags", config: "featureFlags"},
	{file: "omEnforcedHealthListener", config: "envoy.omEnforcedHealth"},
}

// kubeClient is why contour.yaml's Kubernetes client keys are not
// carried.
const kubeClient = "the operator runs each controller in the cluster, with a service account of its own"

// fromContourYAML reads a contour.yaml as Contour does (unknown keys and
// values Contour would refuse are errors) and gives the
// ContourConfiguration spec of the keys it sets, and notes for the keys
// whose settings are not carried (the profile's conversion would not
// see them as set otherwise: Contour's defaults fill the rest).
func fromContourYAML(where string, data []byte) (*contourv1alpha1.ContourConfigurationSpec, []Note, error) {
	params, err := config.Parse(bytes.NewReader(data))
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", where, err)
	}
	if err := params.Validate(); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", where, err)
	}
	var set map[string]any
	if err := yaml.Unmarshal(data, &set); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", where, err)
	}
	spec := map[string]any{}
	var notes []Note
	for _, m := range contourYAML {
		v, ok := take(set, m.file)
		if !ok || v == nil {
			continue // unset, or a key with only comments under it
		}
		if m.why != "" {
			b, _ := json.Marshal(v)
			notes = append(notes, Note{Source: where, Setting: m.file, Value: string(b), Why: m.why})
			continue
		}
		if r := ruleFor(m.config); r != nil && r.carry == nil {
			b, _ := json.Marshal(v)
			why := r.NotCarried
			if why == "" {
				why = "the operator does this: " + r.Operator
			}
			notes = append(notes, Note{Source: where, Setting: m.file, Value: string(b), Why: why})
			continue
		}
		if m.camel {
			v = camelKeys(v)
		}
		if m.nsName {
			ns, name, ok := strings.Cut(fmt.Sprint(v), "/")
			if !ok {
				return nil, nil, fmt.Errorf("%s: %s %q is not namespace/name", where, m.file, v)
			}
			v = map[string]any{"namespace": ns, "name": name}
		}
		put(spec, m.config, v)
	}
	// Keys Contour reads that have no row above: named, never dropped.
	rest := map[string]string{}
	walkJSON("", any(set), rest)
	for _, path := range slices.Sorted(maps.Keys(rest)) {
		notes = append(notes, Note{Source: where, Setting: path, Value: rest[path], Why: "Isobar does not know this contour.yaml key"})
	}
	b, err := json.Marshal(spec)
	if err != nil {
		return nil, nil, err
	}
	out := &contourv1alpha1.ContourConfigurationSpec{}
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	if err := d.Decode(out); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", where, err)
	}
	return out, notes, nil
}

// take removes the value at a dotted path of m, if there is one.
func take(m map[string]any, path string) (any, bool) {
	key, rest, more := strings.Cut(path, ".")
	v, ok := m[key]
	if !ok {
		return nil, false
	}
	if !more {
		delete(m, key)
		return v, true
	}
	sub, ok := v.(map[string]any)
	if !ok {
		return nil, false
	}
	return take(sub, rest)
}

// put sets the value at a dotted path of m.
func put(m map[string]any, path string, v any) {
	key, rest, more := strings.Cut(path, ".")
	if !more {
		// What an earlier, longer path put there stays.
		if old, ok := m[key].(map[string]any); ok {
			if nv, ok := v.(map[string]any); ok {
				for k, x := range old {
					nv[k] = x
				}
			}
		}
		m[key] = v
		return
	}
	sub, ok := m[key].(map[string]any)
	if !ok {
		sub = map[string]any{}
		m[key] = sub
	}
	put(sub, rest, v)
}

// camelKeys renames kebab-case keys ("max-connections") to camelCase
// ("maxConnections"), as ContourConfiguration spells them.
func camelKeys(v any) any {
	m, ok := v.(map[string]any)
	if !ok {
		return v
	}
	out := make(map[string]any, len(m))
	for k, sub := range m {
		parts := strings.Split(k, "-")
		for i := 1; i < len(parts); i++ {
			if parts[i] != "" {
				parts[i] = strings.ToUpper(parts[i][:1]) + parts[i][1:]
			}
		}
		out[strings.Join(parts, "")] = camelKeys(sub)
	}
	return out
}
