package contourconfig

import (
	"encoding/json"
	"k8s.io/utils/ptr"
	"os"
	"path/filepath"
	"reflect"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	"slices"
	"strings"
	"testing"

	contourv1alpha1 "github.com/projectcontour/contour/apis/projectcontour/v1alpha1"

	"isobar.dev/api/v1alpha1"
)

// Every setting of Contour's configuration, and of its ContourDeployment's
// deployment settings, has a rule: carried, done by the operator, or not
// carried with a reason. A Contour release that adds a setting fails
// here until it has one.
func TestEveryContourSettingHasARule(t *testing.T) {
	var paths []string
	leafPaths("", reflect.TypeOf(contourv1alpha1.ContourConfigurationSpec{}), &paths)
	for _, f := range []string{"Contour", "Envoy", "ResourceLabels"} {
		sf, _ := reflect.TypeOf(contourv1alpha1.ContourDeploymentSpec{}).FieldByName(f)
		leafPaths(jsonName(sf), sf.Type, &paths)
	}
	for p := range newerSettings {
		paths = append(paths, p)
	}
	used := map[string]bool{}
	for _, p := range paths {
		r := ruleFor(p)
		if r == nil {
			t.Errorf("Contour's %s has no rule", p)
			continue
		}
		used[r.Path] = true
	}
	for _, r := range Rules {
		if !used[r.Path] {
			t.Errorf("rule %s names no setting of Contour's", r.Path)
		}
		set := 0
		for _, s := range []string{r.Profile, r.Operator, r.NotCarried} {
			if s != "" {
				set++
			}
		}
		if set != 1 || (r.Profile != "") != (r.carry != nil) {
			t.Errorf("rule %s: want exactly one of Profile (with carry), Operator, NotCarried", r.Path)
		}
		switch gw, isGateway := strings.CutPrefix(r.Profile, "(Gateway "); {
		case r.Profile == "" || r.Profile == "(IngressClass)":
		case isGateway:
			if !hasField(reflect.TypeOf(gatewayv1.Gateway{}), strings.TrimSuffix(gw, ")")) {
				t.Errorf("rule %s: the Gateway has no field %s", r.Path, gw)
			}
		case !hasField(reflect.TypeOf(v1alpha1.ContourDeploymentSpec{}), r.Profile):
			t.Errorf("rule %s: the profile has no field %s", r.Path, r.Profile)
		}
	}
}

// leafPaths lists the JSON paths of t's fields down to the types that are
// not Contour configuration structs (Kubernetes types, Contour's HTTPProxy
// types, scalars, lists and maps).
func leafPaths(prefix string, t reflect.Type, into *[]string) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct || t.PkgPath() != reflect.TypeOf(contourv1alpha1.ContourConfigurationSpec{}).PkgPath() {
		*into = append(*into, prefix)
		return
	}
	for i := range t.NumField() {
		f := t.Field(i)
		name := jsonName(f)
		if name == "" || name == "-" {
			continue
		}
		if prefix != "" {
			name = prefix + "." + name
		}
		leafPaths(name, f.Type, into)
	}
}

func jsonName(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
	return name
}

var options = Options{Namespace: "projectcontour", Name: "contour", GatewayClass: "isobar", ControllerName: "isobar.dev/gateway-controller"}

func TestConvert(t *testing.T) {
	for _, tc := range []struct {
		file string
		// want are profile fields (dotted JSON paths under spec) and their
		// values as JSON.
		want map[string]string
		// notes are the settings listed as not carried.
		notes          []string
		ingressClasses []string
		// backendClient is the Secret the Gateway presents to TLS
		// backends, "namespace/name".
		backendClient string
	}{{
		file: "configuration.yaml",
		want: map[string]string{
			"runtimeSettings.http.compression": `"Brotli"`, "runtimeSettings.listener.useProxyProtocol": "true", "runtimeSettings.http.mergeSlashes": "false",
			"runtimeSettings.http.serverHeader": `"AppendIfAbsent"`, "runtimeSettings.tls.minimumVersion": `"1.3"`,
			"runtimeSettings.accessLog.format":     `"JSON"`,
			"runtimeSettings.accessLog.jsonFields": `["method=%REQ(:METHOD)%","path=%REQ(X-ENVOY-ORIGINAL-PATH?:PATH)%","status=%RESPONSE_CODE%"]`,
			"runtimeSettings.timeouts.request":     "", "runtimeSettings.timeouts.connectionIdle": `"1m0s"`,
			"runtimeSettings.http.numTrustedHops": "1", "runtimeSettings.httpproxy.rootNamespaces": `["apps"]`,
			"runtimeSettings.httpproxy.enableExternalNameService": "true",
			"runtimeSettings.httpproxy.fallbackCertificate.name":  `"fallback"`,
			"envoy.omEnforcedHealth":                              "true",
			"runtimeSettings.tls.fingerprint":                     `{"ja3":true}`,
		},
		notes:          []string{"envoy.network.adminPort", "xdsServer.port"},
		ingressClasses: []string{"contour"},
	}, {
		file:           "envoy-deployment.yaml",
		want:           map[string]string{"envoy.workloadType": `"Deployment"`},
		notes:          []string{""},
		ingressClasses: []string{"contour"},
	}, {
		file:           "ingress-class.yaml",
		want:           map[string]string{"runtimeSettings": ""},
		notes:          []string{""},
		ingressClasses: []string{"ingress-class-1"},
	}, {
		file: "deployment.yaml",
		want: map[string]string{
			"controller.replicas": "3", "controller.logLevel": `"debug"`, "envoy.workloadType": `"DaemonSet"`, "envoy.logLevel": `"warn"`,
			"envoy.baseID": "2", "envoy.networkPublishing.type": `"NodePortService"`, "envoy.networkPublishing.externalTrafficPolicy": `"Local"`,
			"envoy.networkPublishing.serviceAnnotations": `{"service.beta.kubernetes.io/aws-load-balancer-type":"nlb"}`,
			"envoy.nodePlacement.nodeSelector":           `{"role":"edge"}`, "envoy.resources.requests": `{"cpu":"100m"}`,
			"runtimeSettings.http.maxRequestsPerConnection": "100", "runtimeSettings.http.http2MaxConcurrentStreams": "64",
			"runtimeSettings.http.allowChunkedLength": "false", "runtimeSettings.timeouts.delayedClose": `"0s"`,
			"runtimeSettings.http.stripTrailingHostDot": "true", "runtimeSettings.tracing.serviceName": `"edge"`,
			"runtimeSettings.tracing.customTags":                `[{"requestHeaderName":"X-Team","tagName":"team"}]`,
			"runtimeSettings.cluster":                           `{"circuitBreakers":{"maxConnections":50},"dnsLookupFamily":"v4","upstreamTLS":{"minimumVersion":"1.3"}}`,
			"runtimeSettings.httpproxy.rateLimitService.domain": `"edge"`, "runtimeSettings.httpproxy.rateLimitService.failOpen": "true",
			"envoy.overloadMaxDownstreamConnections": "50000", "envoy.maxRequestsPerIOCycle": "10",
			"runtimeSettings.globalExtAuth": `{"authPolicy":{"disabled":true},"extensionService":{"name":"authz","namespace":"auth"},"failOpen":true,"withRequestBody":{"maxRequestBytes":2048,"packAsBytes":true}}`,
		},
		notes:         []string{"", "contour.watchNamespaces", "envoy.clientCertificate", "envoy.timeouts.connectionIdleTimeout"},
		backendClient: "certs/envoy-client",
	}, {
		file: "contour-configmap.yaml",
		want: map[string]string{
			"runtimeSettings.tls.minimumVersion": `"1.3"`, "runtimeSettings.accessLog.format": `"JSON"`,
			"runtimeSettings.accessLog.jsonFields":    `["@timestamp=%START_TIME%","method=%REQ(:METHOD)%","status=%RESPONSE_CODE%"]`,
			"runtimeSettings.ingress.statusAddress":   `"local.projectcontour.io"`,
			"runtimeSettings.timeouts.connectionIdle": `"2m0s"`, "runtimeSettings.timeouts.request": "",
			"runtimeSettings.cluster":                    `{"circuitBreakers":{"maxConnections":50,"perHostMaxConnections":10},"dnsLookupFamily":"v4"}`,
			"runtimeSettings.http.numTrustedHops":        "1",
			"runtimeSettings.listener":                   `{"connectionBalancer":"Exact","maxConnectionsPerListener":5000,"socketOptions":{"tos":64}}`,
			"runtimeSettings.httpproxy.policy":           `{"applyToIngress":true,"requestHeaders":{"set":{"X-Env":"prod"}}}`,
			"runtimeSettings.httpproxy.rateLimitService": `{"domain":"contour","extensionService":{"name":"ratelimit","namespace":"projectcontour"}}`,
			"runtimeSettings.tracing":                    `{"extensionService":{"name":"otel","namespace":"tracing"},"serviceName":"edge"}`,
			"runtimeSettings.globalExtAuth":              `{"authPolicy":{"context":{"header1":"value1","header2":"value2"}},"extensionService":{"name":"testserver","namespace":"projectcontour"},"responseTimeout":"1s"}`,
			"envoy.omEnforcedHealth":                     "true",
		},
		notes:          []string{"", "envoy.omEnforcedHealth.address", "incluster", "network.admin-port"},
		ingressClasses: []string{"contour"},
	}} {
		t.Run(tc.file, func(t *testing.T) {
			res, notes := convertFile(t, tc.file)
			spec, err := Prune(res.Profile.Spec)
			if err != nil {
				t.Fatal(err)
			}
			for path, want := range tc.want {
				got := lookupJSON(spec, path)
				if got != want {
					t.Errorf("spec.%s = %s, want %s", path, got, cmpOr(want, "unset"))
				}
			}
			if !slices.Equal(notes, tc.notes) {
				t.Errorf("not carried: %q, want %q", notes, tc.notes)
			}
			var classes []string
			for _, c := range res.IngressClasses {
				classes = append(classes, c.Name)
			}
			if tc.ingressClasses != nil && !slices.Equal(classes, tc.ingressClasses) {
				t.Errorf("IngressClasses %q, want %q", classes, tc.ingressClasses)
			}
			var client string
			if b := res.Gateway.Spec.TLS; b != nil && b.Backend != nil && b.Backend.ClientCertificateRef != nil {
				ref := b.Backend.ClientCertificateRef
				client = cmpOr(string(ptr.Deref(ref.Namespace, "")), options.Namespace) + "/" + string(ref.Name)
			}
			if client != tc.backendClient {
				t.Errorf("the Gateway presents %q to TLS backends, want %q", client, tc.backendClient)
			}
			if got := res.GatewayClass.Spec.ParametersRef; got == nil || got.Name != options.Name || string(*got.Namespace) != options.Namespace {
				t.Errorf("the GatewayClass's parametersRef %+v does not name the profile", got)
			}
		})
	}
}

func convertFile(t *testing.T, file string) (*Result, []string) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", file))
	if err != nil {
		t.Fatal(err)
	}
	srcs, err := Parse(file, data)
	if err != nil {
		t.Fatal(err)
	}
	res, err := Convert(srcs[0], options)
	if err != nil {
		t.Fatal(err)
	}
	var notes []string
	for _, n := range res.Notes {
		notes = append(notes, n.Setting)
	}
	slices.Sort(notes)
	return res, notes
}

func lookupJSON(m map[string]any, path string) string {
	var v any = m
	for _, k := range strings.Split(path, ".") {
		mm, ok := v.(map[string]any)
		if !ok {
			return ""
		}
		if v, ok = mm[k]; !ok {
			return ""
		}
	}
	b, _ := json.Marshal(v)
	return string(b)
}

func cmpOr(a, b string) string {
	if a == "" {
		return b
	}
	return a
}

// Bad input names the file, the object and the setting, and converts
// nothing.
func TestConvertRefuses(t *testing.T) {
	for _, tc := range []struct{ name, yaml, want string }{
		{"unknown field", "apiVersion: projectcontour.io/v1alpha1\nkind: ContourConfiguration\nmetadata: {name: c}\nspec:\n  envoy:\n    listner: {}\n", `in.yaml: ContourConfiguration c: error unmarshaling JSON: while decoding JSON: json: unknown field "listner"`},
		{"value Contour refuses", "apiVersion: projectcontour.io/v1alpha1\nkind: ContourConfiguration\nmetadata: {name: c}\nspec:\n  envoy:\n    listener:\n      compression: {algorithm: lz4}\n", `in.yaml: ContourConfiguration c: envoy.listener.compression.algorithm "lz4" is not gzip, brotli, zstd or disabled`},
		{"bad duration", "apiVersion: projectcontour.io/v1alpha1\nkind: ContourConfiguration\nmetadata: {name: c}\nspec:\n  envoy:\n    timeouts: {requestTimeout: soon}\n", `envoy.timeouts.requestTimeout: "soon" is not a duration`},
		{"a check without a timeout", "apiVersion: projectcontour.io/v1alpha1\nkind: ContourConfiguration\nmetadata: {name: c}\nspec:\n  globalExtAuth:\n    extensionRef: {namespace: auth, name: authz}\n    responseTimeout: infinity\n", `globalExtAuth.responseTimeout "infinity": a check needs a timeout`},
		{"global authorization without a server", "globalExtAuth:\n  failOpen: true\n", "globalExtAuth.extensionRef needs a namespace and a name"},
		{"a fingerprint Contour does not know", "apiVersion: projectcontour.io/v1alpha1\nkind: ContourConfiguration\nmetadata: {name: c, namespace: ns}\nspec:\n  envoy:\n    listener:\n      tls: {fingerprint: {ja5: true}}\n", `in.yaml: ContourConfiguration ns/c: unknown field "envoy.listener.tls.fingerprint.ja5"`},
		{"a fingerprint that is not a boolean", "apiVersion: projectcontour.io/v1alpha1\nkind: ContourDeployment\nmetadata: {name: d}\nspec:\n  runtimeSettings:\n    envoy:\n      listener:\n        tls: {fingerprint: {ja3: yes please}}\n", `in.yaml: ContourDeployment d: envoy.listener.tls.fingerprint.ja3 is not true or false`},
		{"not YAML", "{{{", "in.yaml: document 1 is not YAML"},
		{"another kind", "apiVersion: v1\nkind: Secret\nmetadata: {name: contour}\n", "in.yaml: document 1 is v1 Secret"},
		{"a ConfigMap without contour.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: contour}\n", "in.yaml: ConfigMap contour has no contour.yaml"},
		{"a contour.yaml key Contour does not know", "disablePermitInsecure: false\ntimeouts:\n  request-timeuot: 1s\n", "field request-timeuot not found in type config.TimeoutParameters"},
		{"a contour.yaml value Contour refuses", "accesslog-format: xml\n", `in.yaml: contour.yaml: invalid access log format "xml"`},
		{"nothing", "# empty\n", "in.yaml: no ContourConfiguration or ContourDeployment"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srcs, err := Parse("in.yaml", []byte(tc.yaml))
			if err == nil {
				_, err = Convert(srcs[0], options)
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one saying %q", err, tc.want)
			}
		})
	}
}

// hasField says whether t has the field of a dotted JSON path.
func hasField(t reflect.Type, path string) bool {
	name, rest, more := strings.Cut(path, ".")
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return false
	}
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Anonymous && hasField(f.Type, path) {
			return true
		}
		if jsonName(f) == name {
			return !more || hasField(f.Type, rest)
		}
	}
	return false
}
