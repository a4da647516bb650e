package conformance

import (
	"compress/gzip"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	contourv1 "github.com/projectcontour/contour/apis/projectcontour/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"isobar.dev/e2e/rig"
)

// A Contour user's objects through a provisioned fleet, as Contour serves
// them, with real clients, real connections and the suite's echo backend:
// a path that is spelled otherwise meets the policy of the path it is
// (//admin and /%2Fadmin meet /admin's deny list), and Contour's Ingress
// annotations take effect: allow-http "false" serves no plain HTTP,
// response-timeout answers a slow backend 504, retry-on and num-retries
// retry a failing one until it answers. Contour's listener defaults hold:
// the backend's JSON comes gzipped to a client that accepts gzip, and
// the backend sees X-Request-Start.
func TestContourObjectsThroughFleet(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster")
	}
	r := rig.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	const ns = "contour-users"
	ingress := func(name, host string, annotations map[string]string) *networkingv1.Ingress {
		return &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Annotations: annotations}, Spec: networkingv1.IngressSpec{
			IngressClassName: ptr.To("isobar-proxies"),
			Rules: []networkingv1.IngressRule{{Host: host, IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{
				Paths: []networkingv1.HTTPIngressPath{{Path: "/", PathType: ptr.To(networkingv1.PathTypePrefix), Backend: networkingv1.IngressBackend{
					Service: &networkingv1.IngressServiceBackend{Name: "echo", Port: networkingv1.ServiceBackendPort{Number: 8080}},
				}}},
			}}}},
		}}
	}
	everyone := []contourv1.IPFilterPolicy{{Source: contourv1.IPFilterSourcePeer, CIDR: "0.0.0.0/0"}, {Source: contourv1.IPFilterSourcePeer, CIDR: "::/0"}}
	objects := []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
		ingressClassFor("isobar-proxies", ns),
		&gatewayv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}, Spec: gatewayv1.GatewaySpec{
			GatewayClassName: gatewayClassName,
			Listeners:        []gatewayv1.Listener{{Name: "ingress-http", Protocol: gatewayv1.HTTPProtocolType, Port: 80}},
		}},
		proxy(ns, "office", "office.example.com", []contourv1.Route{
			{Conditions: []contourv1.MatchCondition{{Prefix: "/admin"}}, Services: echo(), IPDenyFilterPolicy: everyone},
			{Services: echo()},
		}),
		ingress("secure-only", "secure.example.com", map[string]string{"kubernetes.io/ingress.allow-http": "false"}),
		ingress("policies", "api.example.com", map[string]string{
			"projectcontour.io/response-timeout": "1s",
			"projectcontour.io/retry-on":         "5xx",
			"projectcontour.io/num-retries":      "3",
		}),
		ingress("plain", "plain.example.com", nil),
	}
	// One echo Pod, so that the retried attempts of a request all reach
	// the Pod that counts them.
	createWithEcho(t, ctx, r, ns, 1, objects)
	address := gatewayAddress(t, ctx, r, types.NamespacedName{Namespace: ns, Name: "web"})
	awaitEcho(t, ctx, address, "office.example.com", "/", "the HTTPProxy served")
	awaitEcho(t, ctx, address, "plain.example.com", "/", "the Ingresses served")

	// Path normalization: every spelling of /admin meets its deny list.
	for _, path := range []string{"/admin", "//admin", "/public/..//admin", "/%2Fadmin"} {
		if status, _, _ := echoGet(ctx, address, "office.example.com", path, nil); status != http.StatusForbidden {
			t.Errorf("GET %s (a spelling of /admin, which denies everyone; redirects followed): status %d, want 403", path, status)
		}
	}
	if status, location := getNoRedirect(ctx, address, "office.example.com", "/%2Fadmin"); status != http.StatusTemporaryRedirect || location != "/admin" {
		t.Errorf("GET /%%2Fadmin: %d to %q, want Envoy's 307 to /admin", status, location)
	}
	if status, _, _ := echoGet(ctx, address, "office.example.com", "/public", nil); status != http.StatusOK {
		t.Errorf("GET /public: status %d, want 200", status)
	}

	// allow-http "false": the Ingress has no routes on plain HTTP.
	if status, _, _ := echoGet(ctx, address, "secure.example.com", "/", nil); status != http.StatusNotFound {
		t.Errorf("GET secure.example.com/ over HTTP (allow-http false): status %d, want 404", status)
	}

	// response-timeout 1s: a backend that takes 3s is answered 504; the
	// Ingress without it waits.
	if status, _, _ := echoGet(ctx, address, "api.example.com", "/?delay=3s", nil); status != http.StatusGatewayTimeout {
		t.Errorf("GET api.example.com/?delay=3s (response-timeout 1s): status %d, want 504", status)
	}
	if status, pod, _ := echoGet(ctx, address, "plain.example.com", "/?delay=2s", nil); status != http.StatusOK || pod == "" {
		t.Errorf("GET plain.example.com/?delay=2s (no timeout annotation): %d from %q, want 200 from the echo Pod", status, pod)
	}

	// Compression: the echo's JSON, gzipped, decodes to the echo of a
	// request that carried X-Request-Start.
	coding, echoed := gzipGet(ctx, address, "plain.example.com", "/compressed")
	if coding != "gzip" {
		t.Errorf("GET plain.example.com/compressed with Accept-Encoding: gzip: Content-Encoding %q, want gzip", coding)
	}
	if start := echoed.Headers["X-Request-Start"]; len(start) != 1 || !strings.HasPrefix(start[0], "t=") || echoed.Pod == "" {
		t.Errorf("the echo Pod %q got X-Request-Start %q, want one t=<seconds>", echoed.Pod, start)
	}

	// retry-on 5xx, num-retries 3: the echo Pod fails a request's first
	// two attempts with 503, and the third gets through; without the
	// annotations the first 503 is the answer.
	if status, _, _ := echoGet(ctx, address, "api.example.com", "/retry/?uuid=annotated&succeedAfter=2&responseCode=503", nil); status != http.StatusOK {
		t.Errorf("GET api.example.com/retry (two failures, three retries): status %d, want 200", status)
	}
	if status, _, _ := echoGet(ctx, address, "plain.example.com", "/retry/?uuid=plain&succeedAfter=2&responseCode=503", nil); status != http.StatusServiceUnavailable {
		t.Errorf("GET plain.example.com/retry (no retry annotations): status %d, want 503", status)
	}
}

// getNoRedirect sends a GET to the Gateway at address for host, and
// returns the status and Location of the answer itself, not following a
// redirect.
func getNoRedirect(ctx context.Context, address, host, path string) (int, string) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+address+path, nil)
	if err != nil {
		return 0, ""
	}
	req.Host = host
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Do(req)
	if err != nil {
		return 0, ""
	}
	defer resp.Body.Close()
	return resp.StatusCode, resp.Header.Get("Location")
}

// gzipGet asks the Gateway at address for host's path, accepting gzip,
// and returns the answer's content coding and the echo it decodes to.
func gzipGet(ctx context.Context, address, host, path string) (string, echoed) {
	var out echoed
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+address+path, nil)
	if err != nil {
		return "", out
	}
	req.Host = host
	req.Header.Set("Accept-Encoding", "gzip")
	// Not the default transport: it would decompress and hide the
	// coding.
	resp, err := (&http.Transport{DisableCompression: true}).RoundTrip(req)
	if err != nil {
		return "", out
	}
	defer resp.Body.Close()
	body := io.Reader(resp.Body)
	if resp.Header.Get("Content-Encoding") == "gzip" {
		if body, err = gzip.NewReader(resp.Body); err != nil {
			return "gzip", out
		}
	}
	_ = json.NewDecoder(body).Decode(&out)
	return resp.Header.Get("Content-Encoding"), out
}
