package e2e

import (
	"fmt"
	"slices"
	"testing"
	"time"

	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"k8s.io/client-go/util/retry"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"isobar.dev/e2e/harness"
)

// Another Gateway's routes, in a cluster that many Gateways share, cost the
// controller no translation (and it caches them as stubs); a route that
// moves to the served Gateway is served whole, and one that leaves it
// loses our status entry.
func TestServeOtherGatewaysRoutes(t *testing.T) {
	ctx, cancel := harness.Context()
	defer cancel()
	ns := namespace(t)
	fleet(t, ctx, ns, "web", "other")
	backend(t, ctx, ns, "app", "10.1.2.3")
	route := func(name, parent, host string) *gatewayv1.HTTPRoute {
		r := httpRoute(ns, name, "app", parent)
		r.Spec.Hostnames = []gatewayv1.Hostname{gatewayv1.Hostname(host)}
		return r
	}
	create(t, ctx, route("mine", "web", "mine.example.com"))
	const theirs = 10
	for i := range theirs {
		create(t, ctx, route(fmt.Sprintf("theirs-%d", i), "other", fmt.Sprintf("theirs-%d.example.com", i)))
	}
	s := serve(t, ns, "web", nil)
	ads := newADSClient(t, dialXDS(t, s.pki, s.xds), "envoy-0", ns+"/web", resourcev3.RouteType)
	// await reads route configurations until host is served or not.
	await := func(host string, want bool) {
		t.Helper()
		var got []string
		for deadline := time.Now().Add(30 * time.Second); ; {
			r := ads.next(resourcev3.RouteType, 10*time.Second)
			ads.ack(r)
			if got = domains(t, r); slices.Contains(got, host) == want {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("RDS serves %v; want %s served: %v", got, host, want)
			}
		}
	}
	edit := func(name string, change func(*gatewayv1.HTTPRoute)) {
		t.Helper()
		err := retry.RetryOnConflict(retry.DefaultBackoff, func() error {
			r := &gatewayv1.HTTPRoute{}
			if err := env.Client.Get(ctx, keyOf(ns, name), r); err != nil {
				return err
			}
			change(r)
			return env.Client.Update(ctx, r)
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	await("mine.example.com", true)

	translations := quiet(t, s.metrics)
	for i := range theirs {
		edit(fmt.Sprintf("theirs-%d", i), func(r *gatewayv1.HTTPRoute) {
			r.Spec.Hostnames = []gatewayv1.Hostname{gatewayv1.Hostname(fmt.Sprintf("theirs-%d.example.org", i))}
		})
		// Apart, so that each would be a pass of its own.
		time.Sleep(50 * time.Millisecond)
	}
	edit("mine", func(r *gatewayv1.HTTPRoute) { r.Spec.Hostnames = []gatewayv1.Hostname{"mine2.example.com"} })
	await("mine2.example.com", true)
	// One pass for ours; a little room for other tests' namespaces, whose
	// deletion this controller also sees.
	if got := scrape(t, s.metrics)["isobar_translation_seconds_count"] - translations; got > 4 {
		t.Errorf("%v translations for %d changes to another Gateway's routes and one to ours, want 1", got, theirs)
	}

	// A route moves to the served Gateway, then leaves it.
	edit("theirs-0", func(r *gatewayv1.HTTPRoute) { r.Spec.ParentRefs[0].Name = "web" })
	await("theirs-0.example.org", true)
	eventually(t, 30*time.Second, "our status entry on the route that moved in", func() bool {
		r := &gatewayv1.HTTPRoute{}
		if err := env.Client.Get(ctx, keyOf(ns, "theirs-0"), r); err != nil {
			t.Fatal(err)
		}
		return routeParent(r, "web") != nil
	})
	edit("theirs-0", func(r *gatewayv1.HTTPRoute) { r.Spec.ParentRefs[0].Name = "other" })
	await("theirs-0.example.org", false)
	eventually(t, 30*time.Second, "our status entry gone from the route that left", func() bool {
		r := &gatewayv1.HTTPRoute{}
		if err := env.Client.Get(ctx, keyOf(ns, "theirs-0"), r); err != nil {
			t.Fatal(err)
		}
		return routeParent(r, "web") == nil
	})
}

// A route deleted and created again under the same name gets our status:
// the writer held equal entries as written for the old object, and must
// not take them for the new one's (conformance caught this: its tests
// reuse route names).
func TestServeRecreatedRouteStatus(t *testing.T) {
	ctx, cancel := harness.Context()
	defer cancel()
	ns, _, _ := appFleet(t, ctx)
	for round := range 5 {
		var r gatewayv1.HTTPRoute
		eventually(t, 30*time.Second, "our status entry on the route", func() bool {
			if err := env.Client.Get(ctx, keyOf(ns, "app"), &r); err != nil {
				t.Fatal(err)
			}
			return routeParent(&r, "web") != nil
		})
		if round == 4 {
			return
		}
		if err := env.Client.Delete(ctx, &r); err != nil {
			t.Fatal(err)
		}
		create(t, ctx, httpRoute(ns, "app", "app", "web"))
	}
}
