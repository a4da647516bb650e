package translate_test

import (
	"slices"
	"strings"
	"testing"

	contourv1 "github.com/projectcontour/contour/apis/projectcontour/v1"
	"k8s.io/apimachinery/pkg/types"

	"isobar.dev/controller/pkg/gatewayapi"
	"isobar.dev/controller/pkg/ir"
	"isobar.dev/controller/pkg/resources"
	"isobar.dev/controller/pkg/translate/httpproxies"
	"isobar.dev/controller/pkg/translate/ingresses"
)

const class = `
apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: isobar}
spec: {controllerName: isobar.dev/gateway-controller}
---
apiVersion: networking.k8s.io/v1
kind: IngressClass
metadata: {name: isobar, annotations: {ingressclass.kubernetes.io/is-default-class: "true"}}
spec:
  controller: isobar.dev/gateway-controller
  parameters: {apiGroup: gateway.networking.k8s.io, kind: Gateway, name: gw, namespace: infra, scope: Namespace}
---
apiVersion: v1
kind: Service
metadata: {name: app, namespace: app}
spec: {ports: [{port: 80}]}
`

const gateway = `
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: gw, namespace: infra}
spec:
  gatewayClassName: isobar
  listeners:
  - {name: ingress-http, protocol: HTTP, port: 80, allowedRoutes: {namespaces: {from: All}}}
  - {name: ingress-https, protocol: HTTPS, port: 443, tls: {certificateRefs: [{name: default-cert}]}, allowedRoutes: {namespaces: {from: All}}}
`

const root = `
apiVersion: projectcontour.io/v1
kind: HTTPProxy
metadata: {name: root, namespace: app, creationTimestamp: "2026-01-01T00:00:00Z"}
spec:
  virtualhost: {fqdn: app.example.com}
  routes: [{services: [{name: app, port: 80}]}]
`

// The HTTPProxy processor alone, from objects to the statuses it reports
// and the virtual hosts it adds: run by the Gateway API's translator with
// no other processor.
func TestHTTPProxyProcessor(t *testing.T) {
	type want struct {
		status string // CurrentStatus
		// errors are substrings of the Valid condition's errors' messages.
		errors []string
	}
	for _, tc := range []struct {
		name string
		// gateway is the Gateway, when not gateway.
		gateway string
		in      string
		want    map[string]want // by proxy name, in namespace app
		hosts   []string
	}{
		{
			name:  "a valid root",
			in:    root,
			want:  map[string]want{"root": {status: "valid"}},
			hosts: []string{"app.example.com"},
		},
		{
			name: "a proxy no root includes",
			in: root + `---
apiVersion: projectcontour.io/v1
kind: HTTPProxy
metadata: {name: child, namespace: app}
spec: {routes: [{services: [{name: app, port: 80}]}]}
`,
			want:  map[string]want{"root": {status: "valid"}, "child": {status: "orphaned"}},
			hosts: []string{"app.example.com"},
		},
		{
			name: "two roots with one FQDN",
			in: root + `---
apiVersion: projectcontour.io/v1
kind: HTTPProxy
metadata: {name: second, namespace: app, creationTimestamp: "2026-01-02T00:00:00Z"}
spec:
  virtualhost: {fqdn: app.example.com}
  routes: [{services: [{name: app, port: 80}]}]
`,
			want: map[string]want{"root": {status: "invalid", errors: []string{"fqdn"}}, "second": {status: "invalid", errors: []string{"fqdn"}}},
		},
		{
			name: "a TLS virtual host whose Secret is missing",
			in:   strings.Replace(root, "virtualhost: {fqdn: app.example.com}", "virtualhost: {fqdn: app.example.com, tls: {secretName: app-cert}}", 1),
			want: map[string]want{"root": {status: "invalid", errors: []string{`Secret "app-cert" is invalid: Secret not found`}}},
		},
		{
			name:    "a Gateway without the Ingress listeners",
			gateway: strings.Replace(gateway, "name: ingress-http,", "name: web,", 1),
			in:      root,
			want:    map[string]want{"root": {status: "invalid", errors: []string{`first listener is "web"`}}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := &resources.Resources{}
			gw := tc.gateway
			if gw == "" {
				gw = gateway
			}
			if _, err := res.Load(tc.name, strings.NewReader(class+"---"+gw+"---"+tc.in)); err != nil {
				t.Fatal(err)
			}
			p := httpproxies.Processor{}
			out := gatewayapi.NewTranslator(gatewayapi.Options{ControllerName: "isobar.dev/gateway-controller"}).Translate(res, p)
			if len(p) != len(tc.want) {
				t.Errorf("statuses of %d proxies, want %d", len(p), len(tc.want))
			}
			for name, w := range tc.want {
				st := p[types.NamespacedName{Namespace: "app", Name: name}]
				if st == nil {
					t.Errorf("no status for HTTPProxy app/%s", name)
					continue
				}
				if st.Status.CurrentStatus != w.status {
					t.Errorf("%s: status %q (%s), want %q", name, st.Status.CurrentStatus, st.Status.Description, w.status)
				}
				msgs := errorMessages(st.Status)
				for _, e := range w.errors {
					if !slices.ContainsFunc(msgs, func(m string) bool { return strings.Contains(m, e) }) {
						t.Errorf("%s: errors %q, want one with %q", name, msgs, e)
					}
				}
			}
			if got := hostsWithRoutes(out.Gateways); !slices.Equal(got, tc.hosts) {
				t.Errorf("virtual hosts with routes %q, want %q", got, tc.hosts)
			}
		})
	}
}

const appIngress = `
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: app, namespace: app}
spec:
  rules:
  - host: app.example.com
    http: {paths: [{path: /, pathType: Prefix, backend: {service: {name: app, port: {number: 80}}}}]}
`

// The Ingress processor alone, from objects to what it reports and the
// virtual hosts it adds: run by the Gateway API's translator with no
// other processor.
func TestIngressProcessor(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   string
		// served and problems are what is reported on app/app; hosts the
		// virtual hosts of the Gateway's IR that serve it.
		served   bool
		problems []string
		hosts    []string
	}{
		{
			name: "served", in: gateway + "---" + appIngress,
			served: true, hosts: []string{"app.example.com"},
		},
		{
			name:     "a Gateway without the Ingress listeners",
			in:       strings.Replace(gateway, "name: ingress-http,", "name: web,", 1) + "---" + appIngress,
			problems: []string{`first listener is "web" (HTTP); to serve Ingress it must be ingress-http`},
		},
		{
			name: "ingress-http does not allow the namespace",
			in: strings.Replace(gateway, "{name: ingress-http, protocol: HTTP, port: 80, allowedRoutes: {namespaces: {from: All}}}",
				"{name: ingress-http, protocol: HTTP, port: 80}", 1) + "---" + appIngress,
			served: true, problems: []string{`listener "ingress-http" allows routes from namespace infra only`},
		},
		{
			name: "a TLS host whose Secret is missing",
			in: gateway + "---" + appIngress + `  tls: [{hosts: [app.example.com], secretName: app-cert}]
`,
			served: true, problems: []string{"TLS host app.example.com: Secret app/app-cert does not exist"},
			hosts: []string{"app.example.com"},
		},
		{
			name:   "a host the listener does not serve",
			in:     strings.Replace(gateway, "{name: ingress-http, protocol: HTTP, port: 80,", "{name: ingress-http, protocol: HTTP, port: 80, hostname: other.example.com,", 1) + "---" + appIngress,
			served: true, problems: []string{"host app.example.com: listener ingress-http of Gateway infra/gw does not serve it"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := &resources.Resources{}
			if _, err := res.Load(tc.name, strings.NewReader(class+"---"+tc.in)); err != nil {
				t.Fatal(err)
			}
			p := ingresses.Processor{}
			out := gatewayapi.NewTranslator(gatewayapi.Options{ControllerName: "isobar.dev/gateway-controller"}).Translate(res, p)
			st := p[types.NamespacedName{Namespace: "app", Name: "app"}]
			if st == nil {
				t.Fatal("nothing reported on Ingress app/app")
			}
			if st.Served != tc.served {
				t.Errorf("served %t, want %t", st.Served, tc.served)
			}
			for _, want := range tc.problems {
				if !slices.ContainsFunc(st.Problems, func(p string) bool { return strings.Contains(p, want) }) {
					t.Errorf("problems %q, want one with %q", st.Problems, want)
				}
			}
			if len(tc.problems) == 0 && len(st.Problems) > 0 {
				t.Errorf("problems %q, want none", st.Problems)
			}
			if got := hostsWithRoutes(out.Gateways); !slices.Equal(got, tc.hosts) {
				t.Errorf("virtual hosts with routes %q, want %q", got, tc.hosts)
			}
		})
	}
}

// errorMessages are the messages of the Valid condition's errors.
func errorMessages(st contourv1.HTTPProxyStatus) []string {
	var out []string
	for _, c := range st.Conditions {
		for _, e := range c.Errors {
			out = append(out, e.Message)
		}
	}
	return out
}

// hostsWithRoutes are the distinct domains of the virtual hosts with
// routes, sorted.
func hostsWithRoutes(gws []*ir.Gateway) []string {
	var out []string
	for _, g := range gws {
		for _, l := range g.Listeners {
			tables := []*ir.RouteTable{l.HTTP}
			for _, c := range l.Chains {
				tables = append(tables, c.HTTP)
			}
			for _, tb := range tables {
				if tb == nil {
					continue
				}
				for _, vh := range tb.VirtualHosts {
					if len(vh.Routes) > 0 {
						out = append(out, vh.Domains...)
					}
				}
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}
