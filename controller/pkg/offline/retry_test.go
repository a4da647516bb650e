package offline

import (
	"strings"
	"testing"
	"time"

	"isobar.dev/api/ports"
	"isobar.dev/controller/pkg/envoysim"
	"isobar.dev/controller/pkg/resources"
)

// TestRetryOnConnectionErrorsAndBackendTimeouts backs the claims of
// HTTPRouteRetryConnectionError and HTTPRouteRetryBackendTimeout, which
// the conformance suite of v1.6.3 has no test for: with a retry stanza, a
// try the backend drops (reset, refused, connect failure) or does not
// answer within timeouts.backendRequest is retried, as the Gateway API's
// HTTPRouteRetry asks; without one, it is not. Envoy is simulated from the
// translated configuration.
func TestRetryOnConnectionErrorsAndBackendTimeouts(t *testing.T) {
	const in = `
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
  listeners: [{name: http, protocol: HTTP, port: 80}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: app, namespace: default}
spec:
  parentRefs: [{name: web}]
  rules:
  - matches: [{path: {type: PathPrefix, value: /retry}}]
    retry: {attempts: 2, codes: [503]}
    timeouts: {request: 10s, backendRequest: 1s}
    backendRefs: [{name: app, port: 80}]
  - matches: [{path: {type: PathPrefix, value: /once}}]
    timeouts: {request: 10s, backendRequest: 1s}
    backendRefs: [{name: app, port: 80}]
---
apiVersion: v1
kind: Service
metadata: {name: app, namespace: default}
spec: {ports: [{name: http, port: 80}]}
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: app-1, namespace: default, labels: {kubernetes.io/service-name: app}}
addressType: IPv4
ports: [{name: http, port: 8080}]
endpoints: [{addresses: [10.0.0.1]}]
`
	res := &resources.Resources{}
	if _, err := res.Load("retry", strings.NewReader(in)); err != nil {
		t.Fatal(err)
	}
	sim := simulator(t, res)
	ok := envoysim.Attempt{Status: 200, Delay: 10 * time.Millisecond}
	reset := envoysim.Attempt{Reset: true}
	slow := envoysim.Attempt{Status: 200, Delay: 2 * time.Second}
	playRetries(t, sim, "app.example.com", []retryCase{
		{"a reset try is retried", "/retry", []envoysim.Attempt{reset, ok}, 200, 2},
		{"a try beyond backendRequest is retried", "/retry", []envoysim.Attempt{slow, ok}, 200, 2},
		{"a listed code is retried", "/retry", []envoysim.Attempt{{Status: 503}, ok}, 200, 2},
		{"retries stop at attempts", "/retry", []envoysim.Attempt{reset}, 503, 3},
		{"timeouts stop at attempts", "/retry", []envoysim.Attempt{slow}, 504, 3},
		{"an unlisted code is not retried", "/retry", []envoysim.Attempt{{Status: 500}, ok}, 500, 1},
		{"no retry stanza: a reset is the answer", "/once", []envoysim.Attempt{reset, ok}, 503, 1},
		{"no retry stanza: a timeout is the answer", "/once", []envoysim.Attempt{slow, ok}, 504, 1},
	})
}

// retryCase is a request to path, the backend's answer to each try (the
// last repeating), and what the client must get after how many tries.
type retryCase struct {
	name     string
	path     string
	tries    []envoysim.Attempt
	status   int
	attempts int
}

// playRetries plays each case's request to authority on port 80 of sim.
func playRetries(t *testing.T, sim *envoysim.Simulator, authority string, cases []retryCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a, err := sim.Simulate(envoysim.Request{Port: uint32(ports.ContainerPort(80)), Method: "GET", Authority: authority, Path: tc.path})
			if err != nil {
				t.Fatal(err)
			}
			out := a.Play(func(n int) envoysim.Attempt { return tc.tries[min(n, len(tc.tries)-1)] })
			if out.Status != tc.status || out.Attempts != tc.attempts {
				t.Errorf("got %d after %d tries (%s), want %d after %d", out.Status, out.Attempts, out.Body, tc.status, tc.attempts)
			}
		})
	}
}

// simulator translates res, whose first Gateway's Envoy it simulates.
func simulator(t *testing.T, res *resources.Resources) *envoysim.Simulator {
	t.Helper()
	result, err := Translate(res, Options{})
	if err != nil {
		t.Fatal(err)
	}
	x := result.XDS[0]
	sim, err := envoysim.New(x.Listeners, x.Routes, x.Clusters, x.Endpoints, x.Secrets)
	if err != nil {
		t.Fatal(err)
	}
	return sim
}

// TestHTTPProxyRetryPolicy plays the retry policies of
// testdata/httpproxy-policies.in.yaml as the Envoy simulated from their
// translation does: retryOn decides what is retried (5xx when unset),
// count how often (-1 never), perTryTimeout bounds each try; and the
// idle timeout answers a response that does not start in time with 408.
func TestHTTPProxyRetryPolicy(t *testing.T) {
	res, _, err := LoadFiles([]string{"testdata/httpproxy-policies.in.yaml"}, "")
	if err != nil {
		t.Fatal(err)
	}
	sim := simulator(t, res)
	ok := envoysim.Attempt{Status: 200, Delay: 10 * time.Millisecond}
	slow := envoysim.Attempt{Status: 200, Delay: time.Second}
	playRetries(t, sim, "policies.example.com", []retryCase{
		{"gateway-error retries a 503", "/retry", []envoysim.Attempt{{Status: 503}, ok}, 200, 2},
		{"retriable-status-codes retries a listed 409", "/retry", []envoysim.Attempt{{Status: 409}, ok}, 200, 2},
		{"a 500 is no gateway error", "/retry", []envoysim.Attempt{{Status: 500}, ok}, 500, 1},
		{"count bounds the retries", "/retry", []envoysim.Attempt{{Status: 502}}, 502, 4},
		{"perTryTimeout abandons a slow try", "/retry", []envoysim.Attempt{slow, ok}, 200, 2},
		{"5xx by default, once", "/retry-default", []envoysim.Attempt{{Status: 500}}, 500, 2},
		{"codes without retriable-status-codes are not retried", "/retry-default", []envoysim.Attempt{{Status: 418}, ok}, 418, 1},
		{"count -1 turns retries off", "/no-retry", []envoysim.Attempt{{Status: 503}, ok}, 503, 1},
		{"an idle stream is answered 408", "/idle", []envoysim.Attempt{{Status: 200, Delay: 2 * time.Second}}, 408, 1},
		{"within the idle timeout", "/idle", []envoysim.Attempt{{Status: 200, Delay: 500 * time.Millisecond}}, 200, 1},
	})
}
