package e2e

import (
	"encoding/base64"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"isobar.dev/api/supported"
	"isobar.dev/e2e/harness"
	"isobar.dev/operator/pkg/certs"
)

// httpProxyBase is what every input of TestEveryHTTPProxyField is
// translated with: a Gateway with Contour's listeners and a certificate,
// its IngressClass as the default class, a CA, and the Services the
// inputs use. @CERT@, @KEY@ and @CA@ are replaced by PEM in base64.
const httpProxyBase = `
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
  - {name: ingress-http, protocol: HTTP, port: 80, allowedRoutes: {namespaces: {from: All}}}
  - {name: ingress-https, protocol: HTTPS, port: 443, tls: {certificateRefs: [{name: web-tls}]}, allowedRoutes: {namespaces: {from: All}}}
---
apiVersion: networking.k8s.io/v1
kind: IngressClass
metadata:
  name: isobar-web
  annotations: {ingressclass.kubernetes.io/is-default-class: "true"}
spec:
  controller: isobar.dev/gateway-controller
  parameters: {apiGroup: gateway.networking.k8s.io, kind: Gateway, name: web, namespace: default, scope: Namespace}
---
apiVersion: v1
kind: Secret
metadata: {name: web-tls, namespace: default}
type: kubernetes.io/tls
data: {tls.crt: "@CERT@", tls.key: "@KEY@"}
---
apiVersion: v1
kind: Secret
metadata: {name: ca, namespace: default}
data: {ca.crt: "@CA@"}
---
apiVersion: v1
kind: Service
metadata: {name: app, namespace: default}
spec:
  ports: [{name: http, port: 80}, {name: https, port: 443}]
---
apiVersion: v1
kind: Service
metadata: {name: other, namespace: default}
spec:
  ports: [{name: http, port: 80}]
---
apiVersion: v1
kind: Service
metadata: {name: authz, namespace: default}
spec:
  ports: [{name: grpc, port: 9000}]
`

// proxyInput is a root HTTPProxy of fqdn p.example.com with the rest of
// its spec (YAML, indented as spec's fields).
func proxyInput(rest string) string {
	return `
apiVersion: projectcontour.io/v1
kind: HTTPProxy
metadata: {name: p, namespace: default}
spec:
  virtualhost: {fqdn: p.example.com, tls: {secretName: web-tls}}
` + rest
}

// tlsInput is a root whose virtualhost.tls is tls.
func tlsInput(tls, rest string) string {
	return `
apiVersion: projectcontour.io/v1
kind: HTTPProxy
metadata: {name: p, namespace: default}
spec:
  virtualhost: {fqdn: p.example.com, tls: ` + tls + `}
` + rest
}

const appRoute = "  routes: [{services: [{name: app, port: 80}]}]\n"

// virtualHostInput is a TLS root routing to app whose virtual host also
// has fields (YAML flow mapping entries).
func virtualHostInput(fields string) string {
	return strings.Replace(proxyInput(appRoute), "tls: {secretName: web-tls}}", "tls: {secretName: web-tls}, "+fields+"}", 1)
}

// routesInput sets every route field Isobar serves, each on a route of
// its own, and includes a proxy: deleting any of them changes what is
// served.
var routesInput = proxyInput(`  includes: [{name: child, conditions: [{prefix: /child}]}]
  routes:
  - conditions: [{prefix: /a}, {header: {name: x-a, exact: b}}, {queryParameter: {name: q, exact: v}}]
    services:
    - {name: app, port: 80, weight: 3, requestHeadersPolicy: {set: [{name: x-s, value: v}]}, responseHeadersPolicy: {remove: [x-t]}, slowStartPolicy: {window: 5s}}
    - {name: other, port: 80, weight: 1}
    - {name: other, port: 80, mirror: true}
  - conditions: [{prefix: /tls}]
    services: [{name: app, port: 443, protocol: tls, validation: {caSecret: ca, subjectName: app.example.com}}]
  - conditions: [{prefix: /insecure}]
    permitInsecure: true
    enableWebsockets: true
    services: [{name: app, port: 80}]
  - conditions: [{prefix: /policies}]
    requestHeadersPolicy: {set: [{name: x-r, value: v}]}
    responseHeadersPolicy: {set: [{name: x-s, value: w}]}
    timeoutPolicy: {response: 5s, idle: 10s, idleConnection: 30s}
    retryPolicy: {count: 2, retryOn: [reset]}
    pathRewritePolicy: {replacePrefix: [{prefix: /policies, replacement: /}]}
    loadBalancerPolicy: {strategy: Random}
    ipAllowPolicy: [{source: Peer, cidr: 10.0.0.0/8}]
    rateLimitPolicy: {local: {requests: 5, unit: second}}
    internalRedirectPolicy: {maxInternalRedirects: 2}
    authPolicy: {context: {a: b}}
    services: [{name: app, port: 80}]
  - conditions: [{prefix: /deny}]
    ipDenyPolicy: [{source: Remote, cidr: 1.2.3.4}]
    healthCheckPolicy: {path: /healthz}
    services: [{name: app, port: 80, healthPort: 443}]
  - conditions: [{prefix: /redirect}]
    requestRedirectPolicy: {hostname: x.example.com, statusCode: 301}
  - conditions: [{prefix: /direct}]
    directResponsePolicy: {statusCode: 204}
---
apiVersion: projectcontour.io/v1
kind: HTTPProxy
metadata: {name: child, namespace: default}
spec:
  routes: [{services: [{name: other, port: 80}]}]
`)

// authorizedInput is a root that authorizes with ExtensionService authz,
// whose spec is spec.
func authorizedInput(spec string) string {
	return proxyInput(`  routes: [{services: [{name: app, port: 80}]}]
---
apiVersion: projectcontour.io/v1
kind: HTTPProxy
metadata: {name: authorized, namespace: default}
spec:
  virtualhost:
    fqdn: authorized.example.com
    tls: {secretName: web-tls}
    authorization: {extensionRef: {name: authz}}
  routes: [{services: [{name: app, port: 80}]}]
---
apiVersion: projectcontour.io/v1alpha1
kind: ExtensionService
metadata: {name: authz, namespace: default, generation: 1}
spec: ` + spec + "\n")
}

var tcpInput = tlsInput("{passthrough: true}", `  tcpproxy:
    services: [{name: app, port: 443, weight: 2}, {name: other, port: 80, weight: 1}]
    loadBalancerPolicy: {strategy: Random}
    healthCheckPolicy: {intervalSeconds: 5}
`)

// tcpServiceInput is a passthrough root whose tcpproxy service has field.
func tcpServiceInput(field string) string {
	return tlsInput("{passthrough: true}", "  tcpproxy: {services: [{name: app, port: 443, "+field+"}]}\n")
}

func tcpIncludeInput(field string) string {
	return tlsInput("{passthrough: true}", "  tcpproxy: {"+field+": {name: tcp}}\n") + `---
apiVersion: projectcontour.io/v1
kind: HTTPProxy
metadata: {name: tcp, namespace: default}
spec:
  tcpproxy: {services: [{name: app, port: 443}]}
`
}

// httpProxyInputs are, by kind and path of HTTPProxyFields, objects that
// set the field (added to httpProxyBase).
var httpProxyInputs = map[string]string{
	"HTTPProxy spec.ingressClassName":                          proxyInput(appRoute + "  ingressClassName: elsewhere\n"),
	"HTTPProxy spec.virtualhost.fqdn":                          proxyInput(appRoute),
	"HTTPProxy spec.virtualhost.tls.secretName":                proxyInput(appRoute),
	"HTTPProxy spec.virtualhost.tls.minimumProtocolVersion":    tlsInput(`{secretName: web-tls, minimumProtocolVersion: "1.3"}`, appRoute),
	"HTTPProxy spec.virtualhost.tls.maximumProtocolVersion":    tlsInput(`{secretName: web-tls, maximumProtocolVersion: "1.2"}`, appRoute),
	"HTTPProxy spec.virtualhost.tls.passthrough":               tcpInput,
	"HTTPProxy spec.virtualhost.tls.enableFallbackCertificate": tlsInput("{secretName: web-tls, enableFallbackCertificate: true}", appRoute),
	"HTTPProxy spec.virtualhost.tls.clientValidation": tlsInput(
		"{secretName: web-tls, clientValidation: {caSecret: ca, optionalClientCertificate: true, forwardClientCertificate: {subject: true, cert: true}}}", appRoute),
	"HTTPProxy spec.virtualhost.corsPolicy":             virtualHostInput("corsPolicy: {allowOrigin: ['*'], allowMethods: [GET], maxAge: 10m}"),
	"HTTPProxy spec.virtualhost.ipAllowPolicy":          virtualHostInput("ipAllowPolicy: [{source: Peer, cidr: 10.0.0.0/8}]"),
	"HTTPProxy spec.virtualhost.ipDenyPolicy":           virtualHostInput("ipDenyPolicy: [{source: Remote, cidr: 1.2.3.4}]"),
	"HTTPProxy spec.virtualhost.rateLimitPolicy.local":  virtualHostInput("rateLimitPolicy: {local: {requests: 10, unit: minute, burst: 5}}"),
	"HTTPProxy spec.virtualhost.rateLimitPolicy.global": virtualHostInput("rateLimitPolicy: {global: {descriptors: [{entries: [{genericKey: {value: a}}]}]}}"),
	"HTTPProxy spec.virtualhost.authorization":          authorizedInput("{protocol: h2c, services: [{name: authz, port: 9000}]}"),
	"HTTPProxy spec.virtualhost.jwtProviders":           virtualHostInput("jwtProviders: [{name: p, default: true, remoteJWKS: {uri: 'https://jwks.example.com/keys'}}]"),

	"HTTPProxy spec.includes":                              routesInput,
	"HTTPProxy spec.routes.conditions":                     routesInput,
	"HTTPProxy spec.routes.services.name":                  routesInput,
	"HTTPProxy spec.routes.services.port":                  routesInput,
	"HTTPProxy spec.routes.services.weight":                routesInput,
	"HTTPProxy spec.routes.services.mirror":                routesInput,
	"HTTPProxy spec.routes.services.protocol":              routesInput,
	"HTTPProxy spec.routes.services.validation":            routesInput,
	"HTTPProxy spec.routes.services.requestHeadersPolicy":  routesInput,
	"HTTPProxy spec.routes.services.responseHeadersPolicy": routesInput,
	"HTTPProxy spec.routes.services.slowStartPolicy":       routesInput,
	"HTTPProxy spec.routes.services.healthPort":            routesInput,
	"HTTPProxy spec.routes.services.cookieRewritePolicies": proxyInput(
		"  routes: [{services: [{name: app, port: 80, cookieRewritePolicies: [{name: c, secure: true}]}]}]\n"),
	"HTTPProxy spec.routes.permitInsecure":         routesInput,
	"HTTPProxy spec.routes.enableWebsockets":       routesInput,
	"HTTPProxy spec.routes.requestHeadersPolicy":   routesInput,
	"HTTPProxy spec.routes.responseHeadersPolicy":  routesInput,
	"HTTPProxy spec.routes.timeoutPolicy":          routesInput,
	"HTTPProxy spec.routes.requestRedirectPolicy":  routesInput,
	"HTTPProxy spec.routes.directResponsePolicy":   routesInput,
	"HTTPProxy spec.routes.retryPolicy":            routesInput,
	"HTTPProxy spec.routes.pathRewritePolicy":      routesInput,
	"HTTPProxy spec.routes.loadBalancerPolicy":     routesInput,
	"HTTPProxy spec.routes.ipAllowPolicy":          routesInput,
	"HTTPProxy spec.routes.ipDenyPolicy":           routesInput,
	"HTTPProxy spec.routes.rateLimitPolicy.local":  routesInput,
	"HTTPProxy spec.routes.healthCheckPolicy":      routesInput,
	"HTTPProxy spec.routes.internalRedirectPolicy": routesInput,
	"HTTPProxy spec.routes.authPolicy":             routesInput,
	"HTTPProxy spec.routes.rateLimitPolicy.global": proxyInput(
		"  routes: [{services: [{name: app, port: 80}], rateLimitPolicy: {global: {descriptors: [{entries: [{remoteAddress: {}}]}]}}}]\n"),
	"HTTPProxy spec.routes.cookieRewritePolicies": proxyInput(
		"  routes: [{services: [{name: app, port: 80}], cookieRewritePolicies: [{name: c, sameSite: Strict}]}]\n"),
	"HTTPProxy spec.routes.jwtVerificationPolicy": strings.Replace(virtualHostInput("jwtProviders: [{name: p, remoteJWKS: {uri: 'https://jwks.example.com/keys'}}]"),
		appRoute, "  routes: [{services: [{name: app, port: 80}], jwtVerificationPolicy: {require: p}}]\n", 1),

	"HTTPProxy spec.tcpproxy.services.name":                  tcpInput,
	"HTTPProxy spec.tcpproxy.services.port":                  tcpInput,
	"HTTPProxy spec.tcpproxy.services.weight":                tcpInput,
	"HTTPProxy spec.tcpproxy.services.protocol":              tcpServiceInput("protocol: tls"),
	"HTTPProxy spec.tcpproxy.services.validation":            tcpServiceInput("protocol: tls, validation: {caSecret: ca, subjectName: app.example.com}"),
	"HTTPProxy spec.tcpproxy.services.mirror":                tcpServiceInput("mirror: true"),
	"HTTPProxy spec.tcpproxy.services.healthPort":            tlsInput("{passthrough: true}", "  tcpproxy: {healthCheckPolicy: {}, services: [{name: app, port: 443, healthPort: 80}]}\n"),
	"HTTPProxy spec.tcpproxy.services.slowStartPolicy":       tcpServiceInput("slowStartPolicy: {window: 5s}"),
	"HTTPProxy spec.tcpproxy.services.requestHeadersPolicy":  tcpServiceInput("requestHeadersPolicy: {set: [{name: x, value: v1}]}"),
	"HTTPProxy spec.tcpproxy.services.responseHeadersPolicy": tcpServiceInput("responseHeadersPolicy: {set: [{name: x, value: v1}]}"),
	"HTTPProxy spec.tcpproxy.services.cookieRewritePolicies": tcpServiceInput("cookieRewritePolicies: [{name: c, secure: true}]"),
	"HTTPProxy spec.tcpproxy.include":                        tcpIncludeInput("include"),
	"HTTPProxy spec.tcpproxy.includes":                       tcpIncludeInput("includes"),
	"HTTPProxy spec.tcpproxy.loadBalancerPolicy":             tcpInput,
	"HTTPProxy spec.tcpproxy.healthCheckPolicy":              tcpInput,

	"TLSCertificateDelegation spec.delegations": `
apiVersion: v1
kind: Secret
metadata: {name: shared-tls, namespace: certs}
type: kubernetes.io/tls
data: {tls.crt: "@CERT@", tls.key: "@KEY@"}
---
apiVersion: projectcontour.io/v1
kind: TLSCertificateDelegation
metadata: {name: d, namespace: certs}
spec:
  delegations: [{secretName: shared-tls, targetNamespaces: [default]}]
---` + tlsInput("{secretName: certs/shared-tls}", appRoute),

	"ExtensionService spec.services.name":                authorizedInput("{protocol: h2c, services: [{name: authz, port: 9000}]}"),
	"ExtensionService spec.services.port":                authorizedInput("{protocol: h2c, services: [{name: authz, port: 9000}]}"),
	"ExtensionService spec.services.weight":              authorizedInput("{protocol: h2c, services: [{name: authz, port: 9000, weight: 5}, {name: app, port: 80, weight: 1}]}"),
	"ExtensionService spec.protocol":                     authorizedInput("{protocol: h2c, services: [{name: authz, port: 9000}]}"),
	"ExtensionService spec.protocolVersion":              authorizedInput("{protocolVersion: v2, services: [{name: authz, port: 9000}]}"),
	"ExtensionService spec.validation":                   authorizedInput("{services: [{name: authz, port: 9000}], validation: {caSecret: ca, subjectName: authz.example.com}}"),
	"ExtensionService spec.timeoutPolicy.response":       authorizedInput("{services: [{name: authz, port: 9000}], timeoutPolicy: {response: 3s}}"),
	"ExtensionService spec.timeoutPolicy.idleConnection": authorizedInput("{services: [{name: authz, port: 9000}], timeoutPolicy: {idleConnection: 30s}}"),
	"ExtensionService spec.timeoutPolicy.idle":           authorizedInput("{services: [{name: authz, port: 9000}], timeoutPolicy: {idle: 30s}}"),
	"ExtensionService spec.loadBalancerPolicy":           authorizedInput("{services: [{name: authz, port: 9000}], loadBalancerPolicy: {strategy: Random}}"),
	"ExtensionService spec.circuitBreakerPolicy":         authorizedInput("{services: [{name: authz, port: 9000}], circuitBreakerPolicy: {maxConnections: 10}}"),
}

// TestEveryHTTPProxyField walks Contour's CRDs that Isobar installs
// (config/crd/contour): every field is in supported's HTTPProxyFields, and
// each Yes, Refused or NotYet there is shown to be so by translating an
// input that sets it.
func TestEveryHTTPProxyField(t *testing.T) {
	root, err := harness.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	var leaves []string
	for kind, paths := range crdLeavesIn(t, filepath.Join(root, "config", "crd", "contour")) {
		for p := range paths {
			leaves = append(leaves, kind+" "+p)
		}
	}
	caPEM, caKey, err := certs.NewCA("fields", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	crt, key, err := certs.Issue(caPEM, caKey, []string{"*.example.com"}, true, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	b64 := base64.StdEncoding.EncodeToString
	pem := strings.NewReplacer("@CERT@", b64(crt), "@KEY@", b64(key), "@CA@", b64(caPEM))
	checkFields(t, "Contour's CRDs", "supported.HTTPProxyFields", leaves, supported.HTTPProxyFields, httpProxyInputs,
		func(t *testing.T, input string) translated {
			return translateOn(t, pem.Replace(httpProxyBase), pem.Replace(input))
		})
}
