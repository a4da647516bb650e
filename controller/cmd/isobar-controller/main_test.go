package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRun(t *testing.T) {
	golden := "../../pkg/offline/testdata/basic-http.in.yaml"
	for _, tc := range []struct {
		name       string
		args       []string
		code       int
		stdout     string
		stderr     string
		notInStdot string
	}{
		{name: "no command", args: nil, code: 2, stderr: "Usage"},
		{name: "unknown command", args: []string{"serve-me"}, code: 2, stderr: `unknown command "serve-me"`},
		{name: "version", args: []string{"version"}, code: 0, stdout: "isobar-controller"},
		{name: "serve with a kubeconfig that is not there", args: []string{"serve", "--gateway", "default/web", "--kubeconfig", "@TMP@/missing", "--health-address", "127.0.0.1:0", "--metrics-address", "0"}, code: 1,
			stderr: "serve: kubeconfig: stat @TMP@/missing: no such file or directory\n"},
		{name: "translate without files", args: []string{"translate"}, code: 2, stderr: "give at least one -f FILE"},
		{name: "missing file", args: []string{"translate", "-f", "/nonexistent.yaml"}, code: 1, stderr: "no such file"},
		{name: "bad gateway flag", args: []string{"translate", "-f", golden, "--gateway", "web"}, code: 2, stderr: "want NAMESPACE/NAME"},
		{name: "bad type", args: []string{"translate", "-f", golden, "--type", "everything"}, code: 2, stderr: `unknown type "everything"`},
		{name: "bootstrap without its flags", args: []string{"bootstrap", "--node-id", "n", "--output-dir", "@TMP@"}, code: 1, stderr: "xDS address is required"},
		{name: "bootstrap", args: []string{"bootstrap", "--node-id", "n", "--cluster", "default/web", "--xds-address", "web.default.svc", "--output-dir", "@TMP@"}, code: 0, stdout: "wrote @TMP@/envoy.json"},
		{name: "status", args: []string{"translate", "-f", golden}, code: 0, stdout: "kind: HTTPRoute"},
		{name: "listeners as JSON", args: []string{"translate", "-f", golden, "--type", "listeners", "-o", "json"}, code: 0, stdout: `"name": "http_80"`},
		{name: "one gateway", args: []string{"translate", "-f", golden, "--gateway", "default/other", "--type", "ir"}, code: 0, stdout: "name: default/other"},
		{name: "explain without a request", args: []string{"explain", "-f", golden}, code: 2, stderr: "give -f FILE and --request"},
		{name: "explain a refused upgrade", args: []string{"explain", "-f", "../../pkg/offline/testdata/ingress-annotations.in.yaml", "--request", "http://api.example.com/slash", "-H", "Connection: Upgrade", "-H", "Upgrade: websocket"},
			code: 0, stdout: "Envoy answers 403 (upgrade_failed: the route does not allow the websocket upgrade)"},
		{name: "explain an external authorization", args: []string{"explain", "-f", "../../pkg/offline/testdata/external-auth.in.yaml", "--request", "http://auth.example.com/grpc"},
			code: 0, stdout: "external authorization: Envoy asks default/grpc-auth/9000/grpc (Service default/grpc-auth port 9000) over gRPC first"},
		{name: "explain a JWT check", args: []string{"explain", "-f", "../../pkg/offline/testdata/httpproxy-jwt.in.yaml", "--request", "https://shop.example.com/", "-H", "Authorization: Bearer a.b.c"},
			code: 0, stdout: "JWT: Envoy verifies the request's token for provider shop.example.com/idp"},
		{name: "explain a bad header", args: []string{"explain", "-f", golden, "--request", "http://app.example.com/", "-H", "novalue"}, code: 2, stderr: "want 'Name: value'"},
		{name: "explain several gateways", args: []string{"explain", "-f", "../../pkg/offline/testdata/isolation.in.yaml", "-f", "../../pkg/offline/testdata/precedence.in.yaml", "--request", "http://a/"}, code: 2, stderr: "choose one with --gateway"},
		{name: "explain a route", args: []string{"explain", "-f", golden, "--request", "GET http://app.example.com/api/v1", "-H", "x-a: b"}, code: 0,
			stdout: "route #0 httproute/default/app/rule/0:api/match/0 (HTTPRoute default/app, rule 0 (api), match 0)"},
		{name: "explain as YAML", args: []string{"explain", "-f", golden, "--request", "http://app.example.com/api", "-o", "yaml"}, code: 0, stdout: "cluster: default/api/80"},
		{name: "explain a port without a listener", args: []string{"explain", "-f", golden, "--request", "http://app.example.com:8080/"}, code: 1, stderr: "Gateway default/web has no TCP listener on port 8080; the connection is refused. Its listeners: http (HTTP 80)"},
		{name: "unknown field", args: []string{"translate", "-f", "testdata/bad-input.yaml"}, code: 1,
			stderr: `document 3: gateway.networking.k8s.io/v1 HTTPRoute: default/typo: unknown field "spec.rules[0].match"`, stdout: "name: app\n    namespace: default", notInStdot: "typo"},
		{name: "every bad document", args: []string{"translate", "-f", "testdata/bad-input.yaml"}, code: 1, stderr: "document 6: not YAML"},
		{name: "namespace flag", args: []string{"translate", "-f", "testdata/bad-input.yaml", "--namespace", "team-a", "--type", "ir"}, code: 1, stdout: "name: team-a/web"},
		{name: "explain despite a bad document", args: []string{"explain", "-f", "testdata/bad-input.yaml", "--request", "http://any/admin"}, code: 1,
			stderr: "translating the rest", stdout: "HTTPRoute default/app"},
		{name: "explain says why there are no endpoints", args: []string{"explain", "-f", "../../../config/samples", "--request", "GET http://app.example.com/api/users"}, code: 0,
			stdout: "why: no endpoints: the input has no EndpointSlice of Service default/api (in a cluster: the Service selects no ready Pod)"},
		{name: "explain says why a route answers 500", args: []string{"explain", "-f", "testdata/missing-backend.yaml", "--request", "GET http://app.example.com/"}, code: 0,
			stdout: "upgrades: websocket\nwhy: HTTPRoute default/app: ResolvedRefs=False BackendNotFound: Service default/app does not exist"},
		{name: "translate shows the sample profile's JSON access log", args: []string{"translate", "-f", "../../../config/samples", "--type", "listeners"}, code: 0,
			stdout: "json_format:\n                  duration_ms: '%DURATION%'"},
		{name: "translate notes a profile missing from the input", args: []string{"translate", "-f", "testdata/missing-backend.yaml"}, code: 0,
			stderr: "ContourDeployment isobar-system/default not in the input; its runtimeSettings are taken as the defaults"},
		{name: "unserved: a Gateway without its class", args: []string{"translate", "-f", "testdata/unserved.yaml"}, code: 0, stderr: `not served: Gateway default/orphan: GatewayClass "missing" is not in the input`},
		{name: "unserved: a route of that Gateway", args: []string{"translate", "-f", "testdata/unserved.yaml"}, code: 0, stderr: "not served: HTTPRoute default/lost: its parentRefs name none of the Gateways served here"},
		{name: "unserved: no class and no default", args: []string{"translate", "-f", "testdata/unserved.yaml"}, code: 0, stderr: "not served: Ingress default/noclass: it names no ingress class, and no IngressClass is marked default"},
		{name: "unserved: a class that does not exist", args: []string{"translate", "-f", "testdata/unserved.yaml"}, code: 0, stderr: `not served: HTTPProxy default/other: IngressClass "nginx" does not exist`},
		{name: "unserved: another controller's class", args: []string{"translate", "-f", "testdata/unserved.yaml"}, code: 0, stderr: `not served: Ingress default/nginx: IngressClass "nginx-class" belongs to controller "k8s.io/ingress-nginx"`},
		{name: "unserved: a class of a Gateway not served", args: []string{"translate", "-f", "testdata/unserved.yaml"}, code: 0, stderr: `not served: HTTPProxy default/elsewhere: IngressClass "elsewhere" hands it to Gateway default/gone`},
		{name: "a chosen Gateway without its class", args: []string{"translate", "-f", "testdata/unserved.yaml", "--gateway", "default/orphan"}, code: 0,
			stderr: `Gateway default/orphan: GatewayClass "missing" is not in the input; translated as this controller's because --gateway names it`},
		{name: "explain says why a host has no route", args: []string{"explain", "-f", "testdata/invalid-regex.yaml", "--request", "http://app.example.com/unclosed"}, code: 0,
			stdout: `why: HTTPRoute default/search: Accepted=False UnsupportedValue: rule 0: match 0: path regular expression "/(unclosed": missing closing )`},
		{name: "explain a 404 of nothing refused", args: []string{"explain", "-f", "testdata/invalid-regex.yaml", "--request", "http://other.example.com/"}, code: 0,
			stdout: "why: no route of Gateway default/web matches the request's host and path, and none for the host is refused"},
		{name: "graph of an HTTPProxy tree", args: []string{"translate", "-f", "../../../examples/httpproxy", "--type", "graph", "-o", "dot"}, code: 0,
			stdout: `"HTTPProxy platform/shop" -> "HTTPProxy shop/shop-routes";`},
		{name: "graph marks what is missing", args: []string{"translate", "-f", "testdata/missing-backend.yaml", "--type", "graph", "-o", "dot"}, code: 0,
			stdout: `"Service default/app" [shape=cylinder, label="Service default/app", color=red, fontcolor=red];`},
		{name: "graph needs dot", args: []string{"translate", "-f", golden, "--type", "graph"}, code: 2, stderr: "--type graph is drawn with -o dot"},
		{name: "a gateway not in the input", args: []string{"translate", "-f", golden, "--gateway", "default/nope"}, code: 1, stderr: "--gateway default/nope: no such Gateway in the input"},
		{name: "convert a Contour configuration", args: []string{"convert", "contour", "-f", "../../pkg/contourconfig/testdata/configuration.yaml"}, code: 0,
			stdout: "compression: Brotli", stderr: "envoy.network.adminPort = 9001 not carried over: the operator does this"},
		{name: "convert without contour", args: []string{"convert", "-f", "x.yaml"}, code: 2, stderr: "Usage: isobar-controller convert contour"},
		{name: "convert bad input", args: []string{"convert", "contour", "-f", "testdata/bad-input.yaml"}, code: 1, stderr: "testdata/bad-input.yaml: document 1 is"},
		{name: "secrets are redacted", args: []string{"translate", "-f", "../../pkg/offline/testdata/https-certificates.in.yaml", "--type", "secrets"}, code: 0, stdout: "[redacted]", notInStdot: "LS0tLS1CRUdJTiBQUklWQVRFIEtFWS0tLS0t" /* base64 of -----BEGIN PRIVATE KEY----- */},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			args := make([]string, len(tc.args))
			for i, a := range tc.args {
				args[i] = strings.ReplaceAll(a, "@TMP@", dir)
			}
			tc.stdout = strings.ReplaceAll(tc.stdout, "@TMP@", dir)
			tc.stderr = strings.ReplaceAll(tc.stderr, "@TMP@", dir)
			var stdout, stderr bytes.Buffer
			code := run(args, &stdout, &stderr)
			if code != tc.code {
				t.Errorf("exit code %d, want %d\nstderr: %s", code, tc.code, stderr.String())
			}
			if !strings.Contains(stdout.String(), tc.stdout) {
				t.Errorf("stdout does not contain %q:\n%s", tc.stdout, stdout.String())
			}
			if !strings.Contains(stderr.String(), tc.stderr) {
				t.Errorf("stderr does not contain %q:\n%s", tc.stderr, stderr.String())
			}
			if tc.notInStdot != "" && strings.Contains(stdout.String(), tc.notInStdot) {
				t.Errorf("stdout contains %q", tc.notInStdot)
			}
		})
	}
}

// A converted Contour configuration serves the user's HTTPProxies with
// its settings: convert, then translate the output with an HTTPProxy of
// the converted IngressClass.
func TestConvertThenTranslate(t *testing.T) {
	dir := t.TempDir()
	var out, errs bytes.Buffer
	if code := run([]string{"convert", "contour", "-f", "../../pkg/contourconfig/testdata/configuration.yaml"}, &out, &errs); code != 0 {
		t.Fatalf("convert: exit %d: %s", code, errs.String())
	}
	profile := filepath.Join(dir, "isobar.yaml")
	apps := filepath.Join(dir, "apps.yaml")
	if err := os.WriteFile(profile, out.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(apps, []byte(`apiVersion: projectcontour.io/v1
kind: HTTPProxy
metadata: {name: app, namespace: apps}
spec:
  ingressClassName: contour
  virtualhost: {fqdn: app.example.com}
  routes:
  - services: [{name: app, port: 80}]
---
apiVersion: v1
kind: Service
metadata: {name: app, namespace: apps}
spec:
  ports: [{port: 80}]
`), 0o600); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	errs.Reset()
	if code := run([]string{"translate", "-f", profile, "-f", apps}, &out, &errs); code != 0 {
		t.Fatalf("translate: exit %d: %s", code, errs.String())
	}
	if !strings.Contains(out.String(), "message: Valid HTTPProxy") {
		t.Errorf("the HTTPProxy is not valid on the converted Gateway:\n%s", out.String())
	}
	out.Reset()
	if code := run([]string{"translate", "-f", profile, "-f", apps, "--type", "listeners", "-o", "json"}, &out, &errs); code != 0 {
		t.Fatalf("translate: exit %d: %s", code, errs.String())
	}
	for _, want := range []string{`"name": "ingress_http"`, "envoy.compression.brotli.compressor", `"server_header_transformation": "APPEND_IF_ABSENT"`, `"xff_num_trusted_hops": 1`} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the listeners lack %s", want)
		}
	}
	if strings.Contains(out.String(), `"merge_slashes": true`) {
		t.Errorf("the listeners merge slashes; the configuration disables it")
	}
}
