package e2e

import (
	"bytes"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"isobar.dev/api/supported"
	"isobar.dev/controller/pkg/offline"
	"isobar.dev/e2e/harness"
)

// experimentalBase is what every input of TestEveryExperimentalField is
// translated with: a Gateway with a listener of each protocol that takes
// routes from every namespace, and the Services the inputs use.
const experimentalBase = `
apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: isobar}
spec: {controllerName: isobar.dev/gateway-controller}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: web, namespace: default}
spec:
  gatewayClassName: isobar
  listeners:
  - {name: http, protocol: HTTP, port: 80, allowedRoutes: {namespaces: {from: All}}}
  - {name: tls, protocol: TLS, port: 443, hostname: "*.example.com", tls: {mode: Passthrough}, allowedRoutes: {namespaces: {from: All}}}
  - {name: tcp, protocol: TCP, port: 9000, allowedRoutes: {namespaces: {from: All}}}
  - {name: udp, protocol: UDP, port: 5353, allowedRoutes: {namespaces: {from: All}}}
---
apiVersion: v1
kind: Service
metadata: {name: app, namespace: default}
spec:
  ports: [{name: http, port: 80}]
---
apiVersion: v1
kind: Service
metadata: {name: other, namespace: default}
spec:
  ports: [{name: http, port: 80}]
`

// defaultGateway is the base's Gateway as a default Gateway.
const defaultGateway = `
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: edge, namespace: default}
spec:
  gatewayClassName: isobar
  defaultScope: All
  listeners:
  - {name: http, protocol: HTTP, port: 80}
  - {name: tls, protocol: TLS, port: 443, hostname: "*.example.com", tls: {mode: Passthrough}}
  - {name: tcp, protocol: TCP, port: 9000}
  - {name: udp, protocol: UDP, port: 5353}
`

// oneRuleRoute is a route of the base's Gateway with one rule, whose
// YAML (indented as a list item's fields) is rule.
func oneRuleRoute(kind, rule string) string {
	return `
apiVersion: gateway.networking.k8s.io/v1
kind: ` + kind + `
metadata: {name: r, namespace: default}
spec:
  parentRefs: [{name: web}]
  rules:
  - ` + rule
}

// externalAuthInput is a rule with an HTTP authorization server that
// sets every field of its ExternalAuth filter.
var externalAuthInput = oneRuleRoute("HTTPRoute",
	"{backendRefs: [{name: app, port: 80}], filters: [{type: ExternalAuth, externalAuth: {protocol: HTTP, backendRef: {name: other, port: 80}, http: {path: /check, allowedResponseHeaders: [x-b]}, forwardBody: {maxSize: 1024}}}]}")

// backendTrafficInput is a route to Service app and an
// XBackendTrafficPolicy for the Service with spec (YAML, after
// targetRefs).
func backendTrafficInput(spec string) string {
	return oneRuleRoute("HTTPRoute", "{backendRefs: [{name: app, port: 80}]}") + `
---
apiVersion: gateway.networking.x-k8s.io/v1alpha1
kind: XBackendTrafficPolicy
metadata: {name: p, namespace: default}
spec:
  targetRefs: [{group: "", kind: Service, name: app}]
  ` + spec + "\n"
}

// xbackendInput is a route to an XBackend of api.example.net:443 with
// more of its spec (YAML, after port).
func xbackendInput(spec string) string {
	return `
apiVersion: gateway.networking.x-k8s.io/v1alpha1
kind: XBackend
metadata: {name: external, namespace: default}
spec:
  type: ExternalHostname
  externalHostname: {hostname: api.example.net}
  port: {name: https, port: 443}
  ` + spec + `
---` + oneRuleRoute("HTTPRoute", "{backendRefs: [{group: gateway.networking.x-k8s.io, kind: XBackend, name: external, port: 443}]}")
}

// experimentalInputs are, by kind and path of ExperimentalFields, objects
// that set the field (added to experimentalBase). For a Yes, the test
// translates them as they are and without the field, and wants the xDS or
// the status to differ; for a Refused, it wants the status to say so.
var experimentalInputs = map[string]string{
	"Gateway spec.defaultScope": defaultGateway + `---` + oneRuleRoute("HTTPRoute", "backendRefs: [{name: app, port: 80}]") +
		"\n  useDefaultGateways: All\n",
	"HTTPRoute spec.useDefaultGateways": defaultGateway + `---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: r, namespace: default}
spec:
  useDefaultGateways: All
  rules: [{backendRefs: [{name: app, port: 80}]}]
`,
	"GRPCRoute spec.useDefaultGateways": defaultGateway + `---
apiVersion: gateway.networking.k8s.io/v1
kind: GRPCRoute
metadata: {name: r, namespace: default}
spec:
  useDefaultGateways: All
  rules: [{backendRefs: [{name: app, port: 80}]}]
`,
	"TLSRoute spec.useDefaultGateways": defaultGateway + `---
apiVersion: gateway.networking.k8s.io/v1
kind: TLSRoute
metadata: {name: r, namespace: default}
spec:
  useDefaultGateways: All
  hostnames: [a.example.com]
  rules: [{backendRefs: [{name: app, port: 80}]}]
`,
	"TCPRoute spec.useDefaultGateways": defaultGateway + `---
apiVersion: gateway.networking.k8s.io/v1
kind: TCPRoute
metadata: {name: r, namespace: default}
spec:
  useDefaultGateways: All
  rules: [{backendRefs: [{name: app, port: 80}]}]
`,
	"UDPRoute spec.useDefaultGateways": defaultGateway + `---
apiVersion: gateway.networking.k8s.io/v1
kind: UDPRoute
metadata: {name: r, namespace: default}
spec:
  useDefaultGateways: All
  rules: [{backendRefs: [{name: app, port: 80}]}]
`,
	"HTTPRoute spec.rules.sessionPersistence.type": oneRuleRoute("HTTPRoute",
		"{backendRefs: [{name: app, port: 80}], sessionPersistence: {type: Header, sessionName: x-s}}"),
	"HTTPRoute spec.rules.sessionPersistence.sessionName": oneRuleRoute("HTTPRoute",
		"{backendRefs: [{name: app, port: 80}], sessionPersistence: {sessionName: JSESSIONID}}"),
	"HTTPRoute spec.rules.sessionPersistence.cookieConfig.lifetimeType": oneRuleRoute("HTTPRoute",
		"{backendRefs: [{name: app, port: 80}], sessionPersistence: {absoluteTimeout: 1h, cookieConfig: {lifetimeType: Permanent}}}"),
	"HTTPRoute spec.rules.sessionPersistence.absoluteTimeout": oneRuleRoute("HTTPRoute",
		"{backendRefs: [{name: app, port: 80}], sessionPersistence: {absoluteTimeout: 1h, cookieConfig: {lifetimeType: Permanent}}}"),
	"GRPCRoute spec.rules.sessionPersistence": oneRuleRoute("GRPCRoute",
		"{backendRefs: [{name: app, port: 80}], sessionPersistence: {type: Header, sessionName: grpc-session}}"),
	"HTTPRoute spec.rules.retry": oneRuleRoute("HTTPRoute",
		"{backendRefs: [{name: app, port: 80}], retry: {attempts: 3, backoff: 100ms, codes: [503]}}"),
	"HTTPRoute spec.rules.filters.externalAuth":           externalAuthInput,
	"HTTPRoute spec.rules.filters.externalAuth.http.path": externalAuthInput,
	"HTTPRoute spec.rules.filters.externalAuth.http.allowedHeaders": oneRuleRoute("HTTPRoute",
		"{backendRefs: [{name: app, port: 80}], filters: [{type: ExternalAuth, externalAuth: {protocol: HTTP, backendRef: {name: other, port: 80}, http: {allowedHeaders: [x-a]}}}]}"),
	"HTTPRoute spec.rules.filters.externalAuth.http.allowedResponseHeaders": externalAuthInput,
	"HTTPRoute spec.rules.filters.externalAuth.forwardBody.maxSize":         externalAuthInput,
	"HTTPRoute spec.rules.filters.externalAuth.grpc.allowedHeaders": oneRuleRoute("HTTPRoute",
		"{backendRefs: [{name: app, port: 80}], filters: [{type: ExternalAuth, externalAuth: {protocol: GRPC, backendRef: {name: other, port: 80}, grpc: {allowedHeaders: [x-c]}}}]}"),
	"HTTPRoute spec.rules.backendRefs.filters.externalAuth": oneRuleRoute("HTTPRoute",
		"{backendRefs: [{name: app, port: 80, filters: [{type: ExternalAuth, externalAuth: {protocol: GRPC, backendRef: {name: other, port: 80}, grpc: {allowedHeaders: [x-c]}}}]}]}"),
	"XBackendTrafficPolicy spec.targetRefs":         backendTrafficInput("retryConstraint: {budget: {percent: 50}}"),
	"XBackendTrafficPolicy spec.retryConstraint":    backendTrafficInput("retryConstraint: {budget: {percent: 50, interval: 5s}, minRetryRate: {count: 4, interval: 2s}}"),
	"XBackendTrafficPolicy spec.sessionPersistence": backendTrafficInput("sessionPersistence: {sessionName: s}"),
	"XBackend spec.type":                            xbackendInput("protocol: HTTP2\n  tls: {mode: ServerOnly}"),
	"XBackend spec.externalHostname":                xbackendInput("protocol: HTTP2"),
	"XBackend spec.port":                            xbackendInput("protocol: HTTP2"),
	"XBackend spec.protocol":                        xbackendInput("protocol: HTTP2"),
	"XBackend spec.tls":                             xbackendInput("tls: {mode: ServerOnly}"),
	"XBackend spec.tls.validation":                  xbackendInput("tls: {mode: ServerOnly, validation: {hostname: edge.example.net, wellKnownCACertificates: System}}"),
	"XBackend spec.tls.clientCertificateRef":        xbackendInput("tls: {mode: ClientAndServer, clientCertificateRef: {name: client}}"),
}

// TestEveryExperimentalField walks the experimental channel's CRDs: every
// field the standard channel does not have is in supported's
// ExperimentalFields, and each Yes or Refused there is shown to be so by
// translating an input that sets it.
func TestEveryExperimentalField(t *testing.T) {
	std, exp := crdLeaves(t, "standard"), crdLeaves(t, "experimental")
	var extra []string
	for kind, leaves := range exp {
		for leaf := range leaves {
			if !std[kind][leaf] {
				extra = append(extra, kind+" "+leaf)
			}
		}
	}
	checkFields(t, "the experimental channel only", "supported.ExperimentalFields", extra, supported.ExperimentalFields, experimentalInputs,
		func(t *testing.T, input string) translated { return translateOn(t, experimentalBase, input) })
}

// checkFields checks that fields cover every one of leaves ("Kind
// path"), names none that is not one, and that each field Isobar serves
// or refuses is shown to be so: translated with its input and without the
// field, a Yes changes the xDS or the status; translated with it, a
// Refused or NotYet has a status that says its Refusal.
func checkFields(t *testing.T, where, list string, leaves []string, fields []supported.FieldSupport, inputs map[string]string, translate func(*testing.T, string) translated) {
	t.Helper()
	slices.Sort(leaves)
	covered := map[string]bool{}
	for _, leaf := range leaves {
		ok := false
		for _, f := range fields {
			k := f.Kind + " " + f.Path
			if leaf == k || strings.HasPrefix(leaf, k+".") {
				ok, covered[k] = true, true
			}
		}
		if !ok {
			t.Errorf("%s is in %s and not in %s: make it take effect or refuse it, and say which", leaf, where, list)
		}
	}
	for _, f := range fields {
		k := f.Kind + " " + f.Path
		if !covered[k] {
			t.Errorf("%s names %s, which is no field of %s", list, k, where)
		}
		input, ok := inputs[k]
		refused := f.Support == supported.Refused || f.Support == supported.NotYet
		switch {
		case f.Support != supported.Yes && !refused:
			if ok {
				t.Errorf("%s is %s: it needs no input", k, f.Support)
			}
			continue
		case !ok:
			t.Errorf("%s is %s, and has no input to show it", k, f.Support)
			continue
		}
		t.Run(k, func(t *testing.T) {
			with := translate(t, input)
			if refused {
				// YAML folds long messages: compare words.
				if !strings.Contains(strings.Join(strings.Fields(with.status), " "), f.Refusal) {
					t.Errorf("no status says %q:\n%s", f.Refusal, with.status)
				}
				return
			}
			without := translate(t, withoutField(t, input, f.Kind, f.Path))
			if with.xds == without.xds && with.status == without.status {
				t.Errorf("%s: the xDS and the status are the same as without it", k)
			}
		})
	}
}

type translated struct{ status, xds string }

// translateOn translates input with base, and renders the status and the
// xDS.
func translateOn(t *testing.T, base, input string) translated {
	t.Helper()
	res, _, err := offline.LoadFiles(nil, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := res.Load("input", strings.NewReader(base+"\n---\n"+input)); err != nil {
		t.Fatal(err)
	}
	r, err := offline.Translate(res, offline.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var out translated
	for typ, into := range map[string]*string{"status": &out.status, "all": &out.xds} {
		b, err := offline.Render(r, typ, "yaml")
		if err != nil {
			t.Fatal(err)
		}
		*into = string(b)
	}
	return out
}

// withoutField is input with path deleted from each object of kind (and
// from each item of the lists on the way).
func withoutField(t *testing.T, input, kind, path string) string {
	t.Helper()
	var out []string
	found := false
	for _, doc := range strings.Split(input, "\n---") {
		if strings.TrimSpace(doc) == "" {
			continue
		}
		var obj map[string]any
		if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
			t.Fatal(err)
		}
		if obj["kind"] == kind {
			found = deletePath(obj, strings.Split(path, ".")) || found
		}
		b, err := yaml.Marshal(obj)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, string(b))
	}
	if !found {
		t.Fatalf("no %s in the input sets %s", kind, path)
	}
	return strings.Join(out, "\n---\n")
}

func deletePath(v any, path []string) bool {
	switch v := v.(type) {
	case map[string]any:
		if len(path) == 1 {
			_, ok := v[path[0]]
			delete(v, path[0])
			return ok
		}
		return deletePath(v[path[0]], path[1:])
	case []any:
		found := false
		for _, item := range v {
			found = deletePath(item, path) || found
		}
		return found
	}
	return false
}

// crdLeaves are, by kind, the leaves of the spec schemas of a channel's
// Gateway API CRDs, over every served version, with "[]" dropped from
// list paths.
func crdLeaves(t *testing.T, channel string) map[string]map[string]bool {
	t.Helper()
	dir, err := harness.GatewayAPICRDs(channel)
	if err != nil {
		t.Fatal(err)
	}
	return crdLeavesIn(t, dir)
}

// crdLeavesIn are crdLeaves of the CRDs of the YAML files in dir.
func crdLeavesIn(t *testing.T, dir string) map[string]map[string]bool {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	type schema struct {
		Type       string            `json:"type"`
		Properties map[string]schema `json:"properties"`
		Items      *schema           `json:"items"`
	}
	out := map[string]map[string]bool{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, doc := range bytes.Split(data, []byte("\n---")) {
			var crd struct {
				Kind string `json:"kind"`
				Spec struct {
					Names    struct{ Kind string } `json:"names"`
					Versions []struct {
						Served bool `json:"served"`
						Schema struct {
							OpenAPIV3Schema schema `json:"openAPIV3Schema"`
						} `json:"schema"`
					} `json:"versions"`
				} `json:"spec"`
			}
			if err := yaml.Unmarshal(doc, &crd); err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			if crd.Kind != "CustomResourceDefinition" {
				continue
			}
			kind := crd.Spec.Names.Kind
			if out[kind] == nil {
				out[kind] = map[string]bool{}
			}
			var walk func(s schema, path string)
			walk = func(s schema, path string) {
				switch {
				case len(s.Properties) > 0:
					for _, k := range slices.Sorted(maps.Keys(s.Properties)) {
						walk(s.Properties[k], path+"."+k)
					}
				case s.Type == "array" && s.Items != nil && len(s.Items.Properties) > 0:
					walk(*s.Items, path)
				default:
					out[kind][path] = true
				}
			}
			for _, v := range crd.Spec.Versions {
				if spec, ok := v.Schema.OpenAPIV3Schema.Properties["spec"]; ok && v.Served {
					walk(spec, "spec")
				}
			}
		}
	}
	return out
}
