package e2e

import (
	"sync"
	"testing"
	"time"

	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"isobar.dev/e2e/harness"
)

// Programmed says an Envoy serves the Gateway as its spec now is. Route
// changes in flight (pushed, not yet acknowledged) and an Envoy joining
// that never acknowledges leave it True: it never transitions, as a
// watcher of the Gateway sees it. A change of the Gateway's spec is a new
// generation, Pending until an Envoy acknowledges its configuration.
func TestProgrammedHoldsWhileChangesAreInFlight(t *testing.T) {
	ctx, cancel := harness.Context()
	defer cancel()
	ns, _, s := appFleet(t, ctx)
	serving := newADSClient(t, dialXDS(t, s.pki, s.xds), "envoy-0", ns+"/web", xdsTypes...)
	for _, typ := range xdsTypes {
		serving.ack(serving.next(typ, 10*time.Second))
	}
	waitGatewayCondition(t, ctx, ns, "web", "Programmed", metav1.ConditionTrue, "Programmed", "")
	programmed := func() (*metav1.Condition, int64) {
		g := &gatewayv1.Gateway{}
		if err := env.Client.Get(ctx, keyOf(ns, "web"), g); err != nil {
			t.Fatal(err)
		}
		return meta.FindStatusCondition(g.Status.Conditions, "Programmed"), g.Generation
	}
	before, _ := programmed()

	// Watch the condition throughout, as a user's script would.
	var mu sync.Mutex
	var seen []string
	stop := make(chan struct{})
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		for {
			select {
			case <-stop:
				return
			case <-time.After(25 * time.Millisecond):
			}
			g := &gatewayv1.Gateway{}
			if err := env.Client.Get(ctx, keyOf(ns, "web"), g); err != nil {
				continue
			}
			if c := meta.FindStatusCondition(g.Status.Conditions, "Programmed"); c != nil && c.Status != metav1.ConditionTrue {
				mu.Lock()
				if s := c.Reason + ": " + c.Message; len(seen) == 0 || seen[len(seen)-1] != s {
					seen = append(seen, s)
				}
				mu.Unlock()
			}
		}
	}()

	// An Envoy joins and never answers.
	joining := newADSClient(t, dialXDS(t, s.pki, s.xds), "envoy-1", ns+"/web", xdsTypes...)
	joining.next(resourcev3.ListenerType, 10*time.Second)
	// Route changes, each held unacknowledged for a while.
	hr := &gatewayv1.HTTPRoute{}
	for i, host := range []string{"a.example.com", "b.example.com", "c.example.com"} {
		if err := env.Client.Get(ctx, keyOf(ns, "app"), hr); err != nil {
			t.Fatal(err)
		}
		hr.Spec.Hostnames = []gatewayv1.Hostname{gatewayv1.Hostname(host)}
		if err := env.Client.Update(ctx, hr); err != nil {
			t.Fatal(err)
		}
		rds := serving.next(resourcev3.RouteType, 10*time.Second)
		// Long enough for the status writer to see the fleet change.
		time.Sleep(time.Second)
		serving.ack(rds)
		t.Logf("change %d acknowledged", i)
	}
	time.Sleep(time.Second)
	close(stop)
	<-watched
	after, _ := programmed()
	if len(seen) > 0 {
		t.Errorf("Programmed went False while the fleet served: %v", seen)
	}
	if after.Status != metav1.ConditionTrue || !after.LastTransitionTime.Equal(&before.LastTransitionTime) {
		t.Errorf("Programmed %s, last transition %s; want True, not transitioned since %s", after.Status, after.LastTransitionTime, before.LastTransitionTime)
	}

	// A new listener is a new generation: Pending until the serving Envoy
	// acknowledges what it changes.
	g := &gatewayv1.Gateway{}
	if err := env.Client.Get(ctx, keyOf(ns, "web"), g); err != nil {
		t.Fatal(err)
	}
	g.Spec.Listeners = append(g.Spec.Listeners, gatewayv1.Listener{Name: "alt", Protocol: gatewayv1.HTTPProtocolType, Port: 8081})
	if err := env.Client.Update(ctx, g); err != nil {
		t.Fatal(err)
	}
	lds := serving.next(resourcev3.ListenerType, 10*time.Second)
	waitGatewayCondition(t, ctx, ns, "web", "Programmed", metav1.ConditionFalse, "Pending", "current generation")
	serving.ack(lds)
	for _, typ := range serving.pending() {
		serving.ack(serving.next(typ, time.Second))
	}
	waitGatewayCondition(t, ctx, ns, "web", "Programmed", metav1.ConditionTrue, "Programmed", "")
}
