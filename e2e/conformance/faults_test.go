package conformance

import (
	"context"
	"net/http"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"isobar.dev/e2e/harness"
	"isobar.dev/e2e/rig"
)

// Faults while a client sends requests through the Gateway throughout,
// each counted:
//   - every controller of the fleet killed (SIGKILL, as the OOM killer
//     would) right after a route change, their Pods kept: the kubelet
//     restarts them, and no request may fail meanwhile;
//   - every controller of the fleet killed (SIGKILL) right after a route
//     change, before its push could finish, and its Pods gone, as on a node
//     failure: every Envoy loses its xDS stream at once and reconnects to
//     the replacements. Envoy keeps its last configuration, so no request
//     may fail; the change must be served after recovery (nothing lost)
//     and the status be current again, without waiting out the dead
//     leader's Lease;
//   - the API server away from the controllers for 30 s (a proxy between
//     them cut), a route changed meanwhile: no request may fail, and once
//     the API server is back the change is served and the status current;
//   - an echo Pod removed without warning: the requests Envoy sends to it
//     fail until the endpoint's withdrawal reaches Envoy, and none after.
//
// The operator restarted mid-rollout is TestUpgradeRollsInOrder's, with
// traffic flowing the same way.
func TestFaultsWithTrafficFlowing(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster")
	}
	const ns, host = "faults", "faults.example.com"
	r := rig.Start(t)
	c := r.Env.Client
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	gw := &gatewayv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}, Spec: gatewayv1.GatewaySpec{
		GatewayClassName: gatewayClassName,
		Listeners:        []gatewayv1.Listener{{Name: "http", Protocol: gatewayv1.HTTPProtocolType, Port: 80}},
	}}
	route := &gatewayv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "echo"}, Spec: gatewayv1.HTTPRouteSpec{
		CommonRouteSpec: gatewayv1.CommonRouteSpec{ParentRefs: []gatewayv1.ParentReference{{Name: "web"}}},
		Hostnames:       []gatewayv1.Hostname{host},
		Rules: []gatewayv1.HTTPRouteRule{{BackendRefs: []gatewayv1.HTTPBackendRef{{BackendRef: gatewayv1.BackendRef{BackendObjectReference: gatewayv1.BackendObjectReference{
			Name: "echo", Port: ptr.To[gatewayv1.PortNumber](8080)}}}}}},
	}}
	// The fleet's controllers reach the API server through a proxy the
	// test can take away.
	proxy := harness.NewAPIProxy(t, r.Env)
	r.Fleet.SetControllerKubeconfig(proxy.Kubeconfig("fleet-proxied"))
	createWithEcho(t, ctx, r, ns, 2, []client.Object{&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, gw, route})
	address := gatewayAddress(t, ctx, r, client.ObjectKeyFromObject(gw))
	awaitEcho(t, ctx, address, host, "/", "the echo Pods")
	awaitEndpoints(t, ctx, c, ns, 2)
	traffic := sendTraffic(ctx, map[string]string{"web": address}, host)
	time.Sleep(2 * time.Second)

	// The controllers killed mid-push, as the OOM killer would: their Pods
	// stay, and the kubelet restarts the containers 10 s later.
	generation := setResponseHeader(t, ctx, c, client.ObjectKeyFromObject(route), "after-restart")
	killed, err := r.Fleet.KillControllers(ns)
	if err != nil || len(killed) == 0 {
		t.Fatalf("killing the controllers: %d killed, %v", len(killed), err)
	}
	start := time.Now()
	served, current := awaitChange(t, ctx, c, address, host, client.ObjectKeyFromObject(gw), client.ObjectKeyFromObject(route), "after-restart", generation, start)
	awaitControllersReady(t, ctx, c, ns, killed)
	restarted := time.Since(start)
	sent, failed := traffic.progress()
	t.Logf("%d controllers killed mid-push and restarted: the change served %v later, the status current %v later, the controllers ready again %v later; %d requests sent so far, %d failed",
		len(killed), served.Round(time.Millisecond), current.Round(time.Millisecond), restarted.Round(time.Millisecond), sent, failed)
	if failed > 0 {
		t.Errorf("%d requests failed while the controllers restarted", failed)
	}

	// The controllers killed mid-push, their Pods gone (a node failure).
	generation = setResponseHeader(t, ctx, c, client.ObjectKeyFromObject(route), "after-kill")
	killed, err = r.Fleet.KillControllers(ns)
	if err != nil || len(killed) == 0 {
		t.Fatalf("killing the controllers: %d killed, %v", len(killed), err)
	}
	start = time.Now()
	for _, key := range killed {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}
		if err := c.Delete(ctx, pod, client.GracePeriodSeconds(0)); client.IgnoreNotFound(err) != nil {
			t.Fatal(err)
		}
	}
	served, current = awaitChange(t, ctx, c, address, host, client.ObjectKeyFromObject(gw), client.ObjectKeyFromObject(route), "after-kill", generation, start)
	sent, failed = traffic.progress()
	t.Logf("%d controllers killed mid-push: the change served %v later, the status current %v later; %d requests sent so far, %d failed",
		len(killed), served.Round(time.Millisecond), current.Round(time.Millisecond), sent, failed)
	if failed > 0 {
		t.Errorf("%d requests failed while the controllers were down", failed)
	}
	// The killed leader never released its Lease, which is held for a
	// minute; a replica that sees its Pod gone frees it instead.
	if current >= 45*time.Second {
		t.Errorf("the status was current %v after the controllers were killed: the dead leader's Lease was waited out", current)
	}

	// The API server away from the controllers for 30 s, a route change
	// made meanwhile.
	sentBefore, failedBefore := traffic.progress()
	proxy.Down()
	start = time.Now()
	generation = setResponseHeader(t, ctx, c, client.ObjectKeyFromObject(route), "after-outage")
	time.Sleep(30*time.Second - time.Since(start))
	proxy.Up()
	back := time.Now()
	served, current = awaitChange(t, ctx, c, address, host, client.ObjectKeyFromObject(gw), client.ObjectKeyFromObject(route), "after-outage", generation, back)
	sent, failed = traffic.progress()
	t.Logf("the API server away from the controllers for 30 s: back, the change made meanwhile served %v later, the status current %v later; %d requests in that phase, %d failed",
		served.Round(time.Millisecond), current.Round(time.Millisecond), sent-sentBefore, failed-failedBefore)
	if failed > failedBefore {
		t.Errorf("%d requests failed while the API server was away", failed-failedBefore)
	}

	// An echo Pod removed without warning.
	var pods corev1.PodList
	if err := c.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{"app": "echo"}); err != nil || len(pods.Items) < 2 {
		t.Fatalf("the echo Pods: %d, %v", len(pods.Items), err)
	}
	sentBefore, failedBefore = traffic.progress()
	start = time.Now()
	if err := c.Delete(ctx, &pods.Items[0], client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
	awaitEndpointGone(t, ctx, c, ns, pods.Items[0].Status.PodIP)
	withdrawn := time.Since(start)
	// Requests Envoy sends to the removed Pod fail until the endpoint's
	// withdrawal reaches it, however long the machine takes for that;
	// then they stop: forty requests in a row must succeed within a
	// minute.
	var recovered time.Duration
	for deadline, last, lastFailed := time.Now().Add(time.Minute), int64(0), -1; recovered == 0; time.Sleep(100 * time.Millisecond) {
		sent, failed := traffic.progress()
		if failed != lastFailed {
			last, lastFailed = sent, failed
		} else if sent-last >= 40 {
			recovered = time.Since(start)
		}
		if time.Now().After(deadline) {
			t.Fatalf("a minute after an echo Pod's removal requests still fail: %d failed in that phase", failed-failedBefore)
		}
	}
	sentAfter, failedAfter := traffic.progress()
	t.Logf("an echo Pod removed: its endpoint withdrawn %v later, forty requests in a row served %v later; %d requests in that phase, %d failed (requests Envoy sent to the removed Pod; no retry policy is set)",
		withdrawn.Round(time.Millisecond), recovered.Round(time.Millisecond), sentAfter-sentBefore, failedAfter-failedBefore)
	total, all := traffic.stop()
	t.Logf("%d requests in all, %d failed", total, len(all))
	for i, f := range all {
		if i < failedBefore {
			t.Errorf("failed while the controllers or the API server were away: %s", f)
		} else if i < 20 {
			t.Logf("failed after the Pod's removal: %s", f)
		}
	}
}

// awaitControllersReady waits for the controller processes of the Pods
// killed to have been restarted and to answer their readiness probe.
func awaitControllersReady(t *testing.T, ctx context.Context, c client.Client, ns string, killed []types.NamespacedName) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(200 * time.Millisecond) {
		ready := 0
		for _, key := range killed {
			pod := &corev1.Pod{}
			if c.Get(ctx, key, pod) == nil && harness.HTTPReady(ctx, pod) {
				ready++
			}
		}
		if ready == len(killed) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("a minute after the controllers were killed, %d of %d answer their readiness probe", ready, len(killed))
		}
	}
}

// statusCurrent reports whether the route is Accepted at generation by the
// Gateway, which is Programmed at its own generation.
func statusCurrent(ctx context.Context, c client.Client, gateway, route types.NamespacedName, generation int64) bool {
	gw := &gatewayv1.Gateway{}
	hr := &gatewayv1.HTTPRoute{}
	if c.Get(ctx, gateway, gw) != nil || c.Get(ctx, route, hr) != nil {
		return false
	}
	p := meta.FindStatusCondition(gw.Status.Conditions, string(gatewayv1.GatewayConditionProgrammed))
	if p == nil || p.Status != metav1.ConditionTrue || p.ObservedGeneration != gw.Generation {
		return false
	}
	for _, parent := range hr.Status.Parents {
		if a := meta.FindStatusCondition(parent.Conditions, string(gatewayv1.RouteConditionAccepted)); a != nil && a.Status == metav1.ConditionTrue && a.ObservedGeneration == generation {
			return true
		}
	}
	return false
}

// awaitEndpoints waits for the echo Service to have n ready endpoints.
func awaitEndpoints(t *testing.T, ctx context.Context, c client.Client, ns string, n int) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); len(readyEndpoints(ctx, c, ns)) != n; time.Sleep(200 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the echo Service has %v ready endpoints, want %d", readyEndpoints(ctx, c, ns), n)
		}
	}
}

// awaitEndpointGone waits for the echo Service's EndpointSlices to drop
// address.
func awaitEndpointGone(t *testing.T, ctx context.Context, c client.Client, ns, address string) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(100 * time.Millisecond) {
		found := false
		for _, a := range readyEndpoints(ctx, c, ns) {
			found = found || a == address
		}
		if !found {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the removed Pod's address %s is still an endpoint of echo after a minute", address)
		}
	}
}

// readyEndpoints are the addresses of the echo Service's ready endpoints.
func readyEndpoints(ctx context.Context, c client.Client, ns string) []string {
	var slices discoveryv1.EndpointSliceList
	if err := c.List(ctx, &slices, client.InNamespace(ns), client.MatchingLabels{discoveryv1.LabelServiceName: "echo"}); err != nil {
		return nil
	}
	var out []string
	for _, s := range slices.Items {
		for _, e := range s.Endpoints {
			if e.Conditions.Ready == nil || *e.Conditions.Ready {
				out = append(out, e.Addresses...)
			}
		}
	}
	return out
}

// setResponseHeader has the route's rule set the x-fault response header
// to value, and returns the route's new generation.
func setResponseHeader(t *testing.T, ctx context.Context, c client.Client, route types.NamespacedName, value string) int64 {
	t.Helper()
	var generation int64
	if err := retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		hr := &gatewayv1.HTTPRoute{}
		if err := c.Get(ctx, route, hr); err != nil {
			return err
		}
		hr.Spec.Rules[0].Filters = []gatewayv1.HTTPRouteFilter{{Type: gatewayv1.HTTPRouteFilterResponseHeaderModifier,
			ResponseHeaderModifier: &gatewayv1.HTTPHeaderFilter{Set: []gatewayv1.HTTPHeader{{Name: "x-fault", Value: value}}}}}
		err := c.Update(ctx, hr)
		generation = hr.Generation
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return generation
}

// awaitChange waits up to three minutes for responses to carry the x-fault
// header value and for the status to be current at the route's
// generation, and returns how long after start each came.
func awaitChange(t *testing.T, ctx context.Context, c client.Client, address, host string, gw, route types.NamespacedName, value string, generation int64, start time.Time) (served, current time.Duration) {
	t.Helper()
	for deadline := time.Now().Add(3 * time.Minute); served == 0 || current == 0; time.Sleep(100 * time.Millisecond) {
		if served == 0 {
			if status, _, h := echoGet(ctx, address, host, "/", nil); status == http.StatusOK && h.Get("x-fault") == value {
				served = time.Since(start)
			}
		}
		if current == 0 && statusCurrent(ctx, c, gw, route, generation) {
			current = time.Since(start)
		}
		if time.Now().After(deadline) {
			t.Fatalf("3 minutes on: x-fault %q served after %v, the status current after %v (0: not yet)", value, served, current)
		}
	}
	return served, current
}
