package e2e

import (
	"fmt"
	"slices"
	"testing"
	"time"

	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	gatewayv1beta1 "sigs.k8s.io/gateway-api/apis/v1beta1"

	"isobar.dev/e2e/harness"
)

// A controller watches EndpointSlices only in the namespaces its Gateway's
// backends live in: slices elsewhere in the cluster wake it for nothing,
// and a backend in a namespace it did not watch yet is served with its
// endpoints from the first push that has its cluster.
func TestServeEndpointSlicesOfBackendNamespaces(t *testing.T) {
	ctx, cancel := harness.Context()
	defer cancel()
	ns, _, s := appFleet(t, ctx)
	ads := newADSClient(t, dialXDS(t, s.pki, s.xds), "envoy-0", ns+"/web", xdsTypes...)
	for _, typ := range xdsTypes {
		ads.ack(ads.next(typ, 10*time.Second))
	}
	if n := scrape(t, s.metrics)["isobar_endpointslice_watched_namespaces"]; n != 1 {
		t.Errorf("watched namespaces: %v, want 1 (the route's backend's)", n)
	}

	// Slices of a Service no route uses, in another namespace, change
	// every 100 ms: the controller does not hear of them.
	elsewhere := namespace(t)
	unused := backend(t, ctx, elsewhere, "unused", "10.9.9.1")
	reconciles := steady(t, s.metrics, "controller_runtime_reconcile_total", 3*time.Second)
	for i := range 10 {
		unused.Endpoints = []discoveryv1.Endpoint{{Addresses: []string{fmt.Sprint("10.9.9.", 20+i)}}}
		if err := env.Client.Update(ctx, unused); err != nil {
			t.Fatal(err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	time.Sleep(time.Second)
	// Other tests' namespaces going away wake it too: a few passes are
	// theirs, ten would be these slices'.
	if n := scrapeSum(t, s.metrics, "controller_runtime_reconcile_total") - reconciles; n >= 5 {
		t.Errorf("ten changes of slices no route uses took %v passes", n)
	}
	if p := ads.pending(); len(p) != 0 {
		t.Errorf("slices no route uses sent %v", p)
	}

	// The route moves to a Service in a namespace not watched yet: the
	// push with its cluster has its endpoints.
	third := namespace(t)
	backend(t, ctx, third, "moved", "10.7.7.7")
	create(t, ctx, &gatewayv1beta1.ReferenceGrant{
		ObjectMeta: metav1.ObjectMeta{Namespace: third, Name: "routes"},
		Spec: gatewayv1beta1.ReferenceGrantSpec{
			From: []gatewayv1beta1.ReferenceGrantFrom{{Group: gatewayv1.GroupName, Kind: "HTTPRoute", Namespace: gatewayv1.Namespace(ns)}},
			To:   []gatewayv1beta1.ReferenceGrantTo{{Group: "", Kind: "Service"}},
		},
	})
	hr := &gatewayv1.HTTPRoute{}
	if err := env.Client.Get(ctx, keyOf(ns, "app"), hr); err != nil {
		t.Fatal(err)
	}
	ref := &hr.Spec.Rules[0].BackendRefs[0].BackendObjectReference
	ref.Name, ref.Namespace = "moved", ptr.To(gatewayv1.Namespace(third))
	if err := env.Client.Update(ctx, hr); err != nil {
		t.Fatal(err)
	}
	eds := ads.next(resourcev3.EndpointType, 10*time.Second)
	if got := endpointAddresses(t, eds); !slices.Equal(got, []string{"10.7.7.7:8080"}) {
		t.Fatalf("EDS with the moved backend: %v, want 10.7.7.7:8080 in the same push as its cluster", got)
	}
	ads.ack(eds)
	eventually(t, 10*time.Second, "only the new backend's namespace watched", func() bool {
		return scrape(t, s.metrics)["isobar_endpointslice_watched_namespaces"] == 1
	})
}
