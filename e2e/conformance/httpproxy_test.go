package conformance

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	contourv1 "github.com/projectcontour/contour/apis/projectcontour/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"isobar.dev/e2e/rig"
)

// HTTPProxy's edge features through a provisioned fleet, with real
// clients, real connections and the suite's echo backends: a Cookie
// load balancer pins a client to one of three Pods with the cookie Envoy
// sets, IP filters read the address the connection really comes from, and
// a local rate limit lets two requests an hour through the fleet's Envoy
// (one per node: the rig has one), and health checks of the real Pods
// keep requests from endpoints that fail them.
func TestHTTPProxyThroughFleet(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster")
	}
	r := rig.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	const ns = "proxies"
	objects := []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
		ingressClassFor("isobar-proxies", ns),
		&gatewayv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}, Spec: gatewayv1.GatewaySpec{
			GatewayClassName: gatewayClassName,
			Listeners:        []gatewayv1.Listener{{Name: "ingress-http", Protocol: gatewayv1.HTTPProtocolType, Port: 80}},
		}},
		proxy(ns, "shop", "shop.example.com", []contourv1.Route{
			{Services: echo(), LoadBalancerPolicy: &contourv1.LoadBalancerPolicy{Strategy: "Cookie"}},
			{Conditions: []contourv1.MatchCondition{{Prefix: "/nobody"}}, Services: echo(),
				IPDenyFilterPolicy: []contourv1.IPFilterPolicy{{Source: contourv1.IPFilterSourcePeer, CIDR: "0.0.0.0/0"}, {Source: contourv1.IPFilterSourcePeer, CIDR: "::/0"}}},
			{Conditions: []contourv1.MatchCondition{{Prefix: "/anybody"}}, Services: echo(),
				IPAllowFilterPolicy: []contourv1.IPFilterPolicy{{Source: contourv1.IPFilterSourcePeer, CIDR: "0.0.0.0/0"}, {Source: contourv1.IPFilterSourcePeer, CIDR: "::/0"}}},
			{Conditions: []contourv1.MatchCondition{{Prefix: "/limited"}}, Services: echo(),
				RateLimitPolicy: &contourv1.RateLimitPolicy{Local: &contourv1.LocalRateLimitPolicy{Requests: 2, Unit: "hour"}}},
			// echo-basic answers /health 200 and /status/503 503.
			{Conditions: []contourv1.MatchCondition{{Prefix: "/well"}}, Services: echo(),
				HealthCheckPolicy: &contourv1.HTTPHealthCheckPolicy{Path: "/health", IntervalSeconds: 1}},
			{Conditions: []contourv1.MatchCondition{{Prefix: "/sick"}}, Services: echo(),
				HealthCheckPolicy: &contourv1.HTTPHealthCheckPolicy{Path: "/status/503", IntervalSeconds: 1}},
			{Conditions: []contourv1.MatchCondition{{Prefix: "/expected"}}, Services: echo(),
				HealthCheckPolicy: &contourv1.HTTPHealthCheckPolicy{Path: "/status/503", IntervalSeconds: 1,
					ExpectedStatuses: []contourv1.HTTPStatusRange{{Start: 503, End: 504}}}},
		}),
	}
	createWithEcho(t, ctx, r, ns, 3, objects)
	address := gatewayAddress(t, ctx, r, types.NamespacedName{Namespace: ns, Name: "web"})
	get := func(path, cookie string) (int, string, http.Header) {
		h := http.Header{}
		if cookie != "" {
			h.Set("Cookie", cookie)
		}
		return echoGet(ctx, address, "shop.example.com", path, h)
	}

	// The three Pods serve, and the first answer sets the cookie.
	var cookie, pinned string
	for deadline := time.Now().Add(2 * time.Minute); cookie == ""; {
		status, pod, header := get("/", "")
		if status == http.StatusOK && pod != "" {
			if c := header.Get("Set-Cookie"); strings.HasPrefix(c, "X-Contour-Session-Affinity=") {
				cookie, _, _ = strings.Cut(c, ";")
				pinned = pod
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no answer with Contour's affinity cookie from shop.example.com at %s in two minutes (last: %d, %q, %v)", address, status, pod, header)
		}
		time.Sleep(time.Second)
	}
	seen := map[string]bool{}
	for range 30 {
		status, pod, _ := get("/", cookie)
		if status != http.StatusOK {
			t.Fatalf("GET / with %s: status %d", cookie, status)
		}
		seen[pod] = true
	}
	if len(seen) != 1 || !seen[pinned] {
		t.Errorf("30 requests with %s reached %v, want %s alone", cookie, seen, pinned)
	}

	// The IP filters see the real client address: a deny list of every
	// address keeps it out, an allow list of every address lets it in.
	if status, _, _ := get("/nobody", ""); status != http.StatusForbidden {
		t.Errorf("GET /nobody (every address denied): status %d, want 403", status)
	}
	if status, _, _ := get("/anybody", ""); status != http.StatusOK {
		t.Errorf("GET /anybody (every address allowed): status %d, want 200", status)
	}

	for _, tc := range []struct {
		path   string
		status int
	}{{"/well", http.StatusOK}, {"/sick", http.StatusServiceUnavailable}, {"/expected", http.StatusOK}} {
		if status, _, _ := get(tc.path, ""); status != tc.status {
			t.Errorf("GET %s: status %d, want %d", tc.path, status, tc.status)
		}
	}

	var statuses []int
	for range 3 {
		status, _, header := get("/limited", "")
		statuses = append(statuses, status)
		if status == http.StatusTooManyRequests && header.Get("X-Envoy-Ratelimited") != "true" {
			t.Errorf("GET /limited answered 429 without x-envoy-ratelimited: %v", header)
		}
	}
	if want := []int{http.StatusOK, http.StatusOK, http.StatusTooManyRequests}; !slices.Equal(statuses, want) {
		t.Errorf("three GET /limited (two an hour): %v, want %v", statuses, want)
	}
}

// echoWorkload is the suite's echo server as a Service (port 8080) and a
// Deployment of replicas Pods labelled app=echo, which answer with their
// name.
func echoWorkload(ns string, replicas int32) []client.Object {
	labels := map[string]string{"app": "echo"}
	podEnv := func(name, path string) corev1.EnvVar {
		return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: path}}}
	}
	return []client.Object{
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "echo"}, Spec: corev1.ServiceSpec{
			Selector: labels,
			Ports:    []corev1.ServicePort{{Name: "http", Port: 8080, TargetPort: intstr.FromInt32(3000)}},
		}},
		&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "echo"}, Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{Containers: []corev1.Container{{
				Name: "echo", Image: "registry.k8s.io/" + rig.EchoImage + ":v1.5.1",
				Env: []corev1.EnvVar{podEnv("POD_NAME", "metadata.name"), podEnv("NAMESPACE", "metadata.namespace")},
			}}}},
		}},
	}
}

// createWithEcho creates objects and an echo Deployment of replicas Pods
// (with its Service) in ns.
func createWithEcho(t *testing.T, ctx context.Context, r *rig.Rig, ns string, replicas int32, objects []client.Object) {
	t.Helper()
	for _, o := range append(objects, echoWorkload(ns, replicas)...) {
		if err := r.Env.Client.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
}

// awaitEcho waits up to two minutes for a GET of host and path at address
// to be answered 200 by an echo Pod; want says what that shows.
func awaitEcho(t *testing.T, ctx context.Context, address, host, path, want string) {
	t.Helper()
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(500 * time.Millisecond) {
		status, pod, _ := echoGet(ctx, address, host, path, nil)
		if status == http.StatusOK && pod != "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("GET %s: %d from %q in two minutes, want 200 from %s", path, status, pod, want)
		}
	}
}

// echoGet sends a GET to the Gateway at address for host, and returns the
// status, the name of the echo Pod that answered ("" for another answer)
// and the response headers; 0 when the request failed.
func echoGet(ctx context.Context, address, host, path string, header http.Header) (int, string, http.Header) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+address+path, nil)
	if err != nil {
		return 0, "", nil
	}
	req.Host, req.Header = host, header
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, "", nil
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var echoed struct {
		Pod string `json:"pod"`
	}
	_ = json.Unmarshal(body, &echoed)
	return resp.StatusCode, echoed.Pod, resp.Header
}

// ingressClassFor is an IngressClass of name whose parameters name
// Gateway web of namespace ns: the Gateway serves its HTTPProxies.
func ingressClassFor(name, ns string) *networkingv1.IngressClass {
	return &networkingv1.IngressClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: networkingv1.IngressClassSpec{
		Controller: controllerName,
		Parameters: &networkingv1.IngressClassParametersReference{APIGroup: ptr.To(gatewayv1.GroupName), Kind: "Gateway", Name: "web",
			Scope: ptr.To(networkingv1.IngressClassParametersReferenceScopeNamespace), Namespace: ptr.To(ns)},
	}}
}

func echo() []contourv1.Service { return []contourv1.Service{{Name: "echo", Port: 8080}} }

func proxy(ns, name, fqdn string, routes []contourv1.Route) *contourv1.HTTPProxy {
	return &contourv1.HTTPProxy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: contourv1.HTTPProxySpec{
		VirtualHost: &contourv1.VirtualHost{Fqdn: fqdn}, IngressClassName: "isobar-proxies", Routes: routes,
	}}
}

// gatewayAddress waits for a Gateway to be programmed with an address,
// and returns it with the port of its first listener.
func gatewayAddress(t *testing.T, ctx context.Context, r *rig.Rig, key types.NamespacedName) string {
	t.Helper()
	for deadline := time.Now().Add(2 * time.Minute); ; {
		gw := &gatewayv1.Gateway{}
		if err := r.Env.Client.Get(ctx, key, gw); err != nil {
			t.Fatal(err)
		}
		if len(gw.Status.Addresses) > 0 && len(gw.Spec.Listeners) > 0 {
			return fmt.Sprintf("%s:%d", gw.Status.Addresses[0].Value, gw.Spec.Listeners[0].Port)
		}
		if time.Now().After(deadline) {
			t.Fatalf("Gateway %s has no address in two minutes: %+v", key, gw.Status)
		}
		time.Sleep(500 * time.Millisecond)
	}
}
