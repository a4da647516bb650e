package conformance

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"isobar.dev/e2e/rig"
)

// Fields of the experimental channel beyond the suite's features, through
// provisioned fleets with the suite's echo Pods.
func TestExperimentalChannelThroughFleet(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster")
	}
	r := rig.StartOn(t, "experimental")
	t.Run("sessionPersistence", func(t *testing.T) { sessionPersistence(t, r) })
	t.Run("defaultGateways", func(t *testing.T) { defaultGateways(t, r) })
	t.Run("externalAuth", func(t *testing.T) { externalAuth(t, r) })
	t.Run("xbackends", func(t *testing.T) { xbackends(t, r) })
}

// sessionPersistence: a cookie session and a header session each keep a
// client on one Pod, also after a Pod is added, and a session whose Pod is
// gone moves to another, with a new cookie.
func sessionPersistence(t *testing.T, r *rig.Rig) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	const ns = "sessions"
	prefix := func(p string) []gatewayv1.HTTPRouteMatch {
		return []gatewayv1.HTTPRouteMatch{{Path: &gatewayv1.HTTPPathMatch{Type: ptr.To(gatewayv1.PathMatchPathPrefix), Value: ptr.To(p)}}}
	}
	backend := []gatewayv1.HTTPBackendRef{{BackendRef: gatewayv1.BackendRef{BackendObjectReference: gatewayv1.BackendObjectReference{
		Name: "echo", Port: ptr.To[gatewayv1.PortNumber](8080)}}}}
	objects := []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
		&gatewayv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}, Spec: gatewayv1.GatewaySpec{
			GatewayClassName: gatewayClassName,
			Listeners:        []gatewayv1.Listener{{Name: "http", Protocol: gatewayv1.HTTPProtocolType, Port: 80}},
		}},
		&gatewayv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "shop"}, Spec: gatewayv1.HTTPRouteSpec{
			CommonRouteSpec: gatewayv1.CommonRouteSpec{ParentRefs: []gatewayv1.ParentReference{{Name: "web"}}},
			Hostnames:       []gatewayv1.Hostname{"shop.example.com"},
			Rules: []gatewayv1.HTTPRouteRule{
				{Matches: prefix("/cart"), BackendRefs: backend, SessionPersistence: &gatewayv1.SessionPersistence{}},
				{Matches: prefix("/api"), BackendRefs: backend, SessionPersistence: &gatewayv1.SessionPersistence{
					SessionName: ptr.To("X-Session"), Type: ptr.To(gatewayv1.HeaderBasedSessionPersistence)}},
			},
		}},
	}
	createWithEcho(t, ctx, r, ns, 2, objects)
	address := gatewayAddress(t, ctx, r, types.NamespacedName{Namespace: ns, Name: "web"})
	get := func(path string, h http.Header) (int, string, http.Header) {
		return echoGet(ctx, address, "shop.example.com", path, h)
	}
	cookieOf := func(h http.Header) string {
		c, _, _ := strings.Cut(h.Get("Set-Cookie"), ";")
		return c
	}
	// pinned checks that n requests with h all reach pod.
	pinned := func(what, path string, h http.Header, pod string) {
		t.Helper()
		for range 20 {
			status, got, _ := get(path, h)
			if status != http.StatusOK || got != pod {
				t.Fatalf("%s: GET %s with %v: status %d from %q, want 200 from %s", what, path, h, status, got, pod)
			}
		}
	}

	// The first answer starts a session in a cookie for the rule's path.
	var cookie, pod string
	for deadline := time.Now().Add(2 * time.Minute); cookie == ""; {
		status, got, header := get("/cart", nil)
		if status == http.StatusOK && got != "" && strings.HasPrefix(header.Get("Set-Cookie"), "isobar-session-") {
			cookie, pod = cookieOf(header), got
			if !strings.Contains(header.Get("Set-Cookie"), "Path=/cart") || strings.Contains(header.Get("Set-Cookie"), "Max-Age") {
				t.Errorf("session cookie %q: want one for Path=/cart that ends with the browser session", header.Get("Set-Cookie"))
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no answer with a session cookie from shop.example.com/cart at %s in two minutes (last: %d, %q, %v)", address, status, got, header)
		}
		time.Sleep(time.Second)
	}
	withCookie := http.Header{"Cookie": {cookie}}
	pinned("cookie session", "/cart/items", withCookie, pod)

	// The header session.
	status, apiPod, header := get("/api", nil)
	session := header.Get("X-Session")
	if status != http.StatusOK || session == "" {
		t.Fatalf("GET /api: status %d, headers %v: want 200 and an x-session header", status, header)
	}
	withHeader := http.Header{"X-Session": {session}}
	pinned("header session", "/api", withHeader, apiPod)

	// A third Pod: new clients reach it, sessions stay where they are.
	// The controller manager writes the Deployment's status: read it
	// again on a conflict.
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		deploy := &appsv1.Deployment{}
		if err := r.Env.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: "echo"}, deploy); err != nil {
			return err
		}
		deploy.Spec.Replicas = ptr.To[int32](3)
		return r.Env.Client.Update(ctx, deploy)
	}); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for deadline := time.Now().Add(2 * time.Minute); len(seen) < 3; {
		if _, got, _ := get("/cart", nil); got != "" {
			seen[got] = true
		}
		if time.Now().After(deadline) {
			t.Fatalf("new clients reached %v in two minutes, want three Pods", seen)
		}
		time.Sleep(100 * time.Millisecond)
	}
	pinned("cookie session after a Pod was added", "/cart", withCookie, pod)
	pinned("header session after a Pod was added", "/api", withHeader, apiPod)

	// The session's Pod goes: its requests move, and the cookie with them.
	if err := r.Env.Client.Delete(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: pod}}); err != nil {
		t.Fatal(err)
	}
	waitEndpointGone(t, ctx, r, ns, pod)
	var moved string
	for deadline := time.Now().Add(time.Minute); moved == ""; {
		status, got, header := get("/cart", withCookie)
		if status == http.StatusOK && got != "" && got != pod {
			if c := cookieOf(header); strings.HasPrefix(c, "isobar-session-") && c != cookie {
				cookie, moved = c, got
			} else {
				t.Fatalf("GET /cart with the session of a Pod that is gone: answered by %s, Set-Cookie %q: want a new session cookie", got, header.Get("Set-Cookie"))
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the session of deleted Pod %s did not move in a minute (last: %d from %q)", pod, status, got)
		}
		time.Sleep(200 * time.Millisecond)
	}
	pinned("moved cookie session", "/cart", http.Header{"Cookie": {cookie}}, moved)
}

// waitEndpointGone waits until no EndpointSlice of the echo Service names
// pod.
func waitEndpointGone(t *testing.T, ctx context.Context, r *rig.Rig, ns, pod string) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); ; {
		var slices discoveryv1.EndpointSliceList
		if err := r.Env.Client.List(ctx, &slices, client.InNamespace(ns), client.MatchingLabels{discoveryv1.LabelServiceName: "echo"}); err != nil {
			t.Fatal(err)
		}
		named := false
		for _, s := range slices.Items {
			for _, e := range s.Endpoints {
				named = named || (e.TargetRef != nil && e.TargetRef.Name == pod)
			}
		}
		if !named {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("Pod %s still an endpoint of echo a minute after it was deleted", pod)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
