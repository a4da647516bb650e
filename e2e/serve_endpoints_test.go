package e2e

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	discoveryv1 "k8s.io/api/discovery/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	gatewayv1beta1 "sigs.k8s.io/gateway-api/apis/v1beta1"

	"isobar.dev/e2e/harness"
	"isobar.dev/operator/pkg/render"
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

	// Slices of Services no route uses, in another namespace and in the
	// backend's own, change every 100 ms: the controller does not hear of
	// them.
	elsewhere := namespace(t)
	unused := []*discoveryv1.EndpointSlice{backend(t, ctx, elsewhere, "unused", "10.9.9.1"), backend(t, ctx, ns, "unused-here", "10.9.8.1")}
	reconciles := steady(t, s.metrics, "controller_runtime_reconcile_total", 3*time.Second)
	for i := range 10 {
		u := unused[i%2]
		u.Endpoints = []discoveryv1.Endpoint{{Addresses: []string{fmt.Sprint("10.9.9.", 20+i)}}}
		if err := env.Client.Update(ctx, u); err != nil {
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

	// A second backend in the same namespace, a Service not watched yet
	// (its namespace's watch is replaced by one that selects both): its
	// endpoints come in the push that adds its cluster, and the first
	// backend's are not touched.
	backend(t, ctx, third, "second", "10.7.7.8")
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := env.Client.Get(ctx, keyOf(ns, "app"), hr); err != nil {
			return err
		}
		second := hr.Spec.Rules[0].BackendRefs[0].DeepCopy()
		second.Name = "second"
		hr.Spec.Rules[0].BackendRefs = append(hr.Spec.Rules[0].BackendRefs, *second)
		return env.Client.Update(ctx, hr)
	})
	if err != nil {
		t.Fatal(err)
	}
	eds = ads.next(resourcev3.EndpointType, 10*time.Second)
	for _, cla := range resources[endpointv3.ClusterLoadAssignment](t, eds) {
		if cla.ClusterName != third+"/second/8080" {
			t.Errorf("EDS with a second backend re-sent %s", cla.ClusterName)
		}
	}
	if got := endpointAddresses(t, eds); !slices.Equal(got, []string{"10.7.7.8:8080"}) {
		t.Fatalf("EDS with a second backend: %v, want 10.7.7.8:8080 in the same push as its cluster", got)
	}
	ads.ack(eds)
}

// A controller started under a running fleet (an upgrade) pushes its first
// configuration only with the endpoints it serves: until then its xDS port
// is closed and Envoys keep what they had, and clusters without endpoints
// would take every reconnecting Envoy from working endpoints to none. Here
// RBAC refuses the backend namespace's EndpointSlices for longer than a
// later pass would wait for them; the first pass waits, and the first EDS
// an Envoy gets has the endpoints.
func TestServeFirstPushWaitsForEndpoints(t *testing.T) {
	ctx, cancel := harness.Context()
	defer cancel()
	ns := namespace(t)
	fleet(t, ctx, ns, "web")
	backend(t, ctx, ns, "app", "10.1.2.3")
	create(t, ctx, httpRoute(ns, "app", "app", "web"))
	gw := &gatewayv1.Gateway{}
	if err := env.Client.Get(ctx, keyOf(ns, "web"), gw); err != nil {
		t.Fatal(err)
	}
	kubeconfig := asRenderedController(t, ctx, gw, nil)
	restore := refuseEndpointSlices(t, ctx, gw)

	s := startController(t, kubeconfig, ns, "web", nil)
	refused := time.Now().Add(endpointWaitAfterStart)
	for time.Now().Before(refused) {
		if exited, err := s.proc.Exited(); exited {
			t.Fatalf("the controller exited: %v\n%s", err, s.proc.Output())
		}
		if resp, err := http.Get(s.health + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				t.Fatal("the controller served its first configuration before it could read the backends' EndpointSlices")
			}
		}
		time.Sleep(500 * time.Millisecond)
	}
	restore()
	waitReady(t, s.proc, s.health+"/readyz", 60*time.Second)
	ads := newADSClient(t, dialXDS(t, s.pki, s.xds), "envoy-0", ns+"/web", resourcev3.EndpointType)
	if got := endpointAddresses(t, ads.next(resourcev3.EndpointType, 10*time.Second)); !slices.Equal(got, []string{"10.1.2.3:8080"}) {
		t.Fatalf("first EDS: %v, want 10.1.2.3:8080", got)
	}
}

// A new Service beside a backend's, in the same namespace, replaces the
// namespace's watch with one that selects both. Until the new watch has
// listed (here RBAC refuses it, for longer than the pass waits), the old
// one keeps serving the first backend's endpoints: the push that adds the
// new cluster leaves the first one's alone.
func TestServeNewServiceKeepsNamespaceEndpoints(t *testing.T) {
	ctx, cancel := harness.Context()
	defer cancel()
	ns := namespace(t)
	fleet(t, ctx, ns, "web")
	backend(t, ctx, ns, "app", "10.1.2.3")
	create(t, ctx, httpRoute(ns, "app", "app", "web"))
	gw := &gatewayv1.Gateway{}
	if err := env.Client.Get(ctx, keyOf(ns, "web"), gw); err != nil {
		t.Fatal(err)
	}
	s := serveWith(t, asRenderedController(t, ctx, gw, nil), ns, "web", nil)
	ads := newADSClient(t, dialXDS(t, s.pki, s.xds), "envoy-0", ns+"/web", resourcev3.ClusterType, resourcev3.EndpointType)
	ads.ack(ads.next(resourcev3.ClusterType, 10*time.Second))
	eds := ads.next(resourcev3.EndpointType, 10*time.Second)
	if got := endpointAddresses(t, eds); !slices.Equal(got, []string{"10.1.2.3:8080"}) {
		t.Fatalf("EDS: %v, want 10.1.2.3:8080", got)
	}
	ads.ack(eds)

	restore := refuseEndpointSlices(t, ctx, gw)
	backend(t, ctx, ns, "second", "10.1.2.4")
	hr := &gatewayv1.HTTPRoute{}
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := env.Client.Get(ctx, keyOf(ns, "app"), hr); err != nil {
			return err
		}
		second := hr.Spec.Rules[0].BackendRefs[0].DeepCopy()
		second.Name = "second"
		hr.Spec.Rules[0].BackendRefs = append(hr.Spec.Rules[0].BackendRefs, *second)
		return env.Client.Update(ctx, hr)
	})
	if err != nil {
		t.Fatal(err)
	}
	ads.ack(ads.next(resourcev3.ClusterType, 30*time.Second))
	eds = ads.next(resourcev3.EndpointType, 10*time.Second)
	for _, cla := range resources[endpointv3.ClusterLoadAssignment](t, eds) {
		if cla.ClusterName == ns+"/app/8080" && len(cla.Endpoints) == 0 {
			t.Fatal("the push that added the new backend took the first backend's endpoints away")
		}
	}
	ads.ack(eds)
	restore()
	// Then the new backend's endpoints come, once its watch lists.
	for {
		eds := ads.next(resourcev3.EndpointType, 60*time.Second)
		ads.ack(eds)
		if slices.Contains(endpointAddresses(t, eds), "10.1.2.4:8080") {
			return
		}
	}
}

// refuseEndpointSlices takes the EndpointSlice rule out of the ClusterRole
// the operator renders for gw's controller, and returns what puts it back.
func refuseEndpointSlices(t *testing.T, ctx context.Context, gw *gatewayv1.Gateway) (restore func()) {
	t.Helper()
	f, err := render.Render(render.Input{Gateway: gw, ControllerName: string(controllerName)})
	if err != nil {
		t.Fatal(err)
	}
	role := &rbacv1.ClusterRole{}
	if err := env.Client.Get(ctx, client.ObjectKey{Name: f.Names.ClusterRole}, role); err != nil {
		t.Fatal(err)
	}
	granted := role.DeepCopy()
	role.Rules = slices.DeleteFunc(role.Rules, func(r rbacv1.PolicyRule) bool { return slices.Contains(r.Resources, "endpointslices") })
	if len(role.Rules) == len(granted.Rules) {
		t.Fatal("the controller's ClusterRole has no EndpointSlice rule to take away")
	}
	if err := env.Client.Update(ctx, role); err != nil {
		t.Fatal(err)
	}
	return func() {
		t.Helper()
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			if err := env.Client.Get(ctx, client.ObjectKey{Name: f.Names.ClusterRole}, role); err != nil {
				return err
			}
			role.Rules = granted.Rules
			return env.Client.Update(ctx, role)
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// endpointWaitAfterStart is longer than a pass after the first waits for
// a namespace's EndpointSlices (10 s), with the controller's start.
const endpointWaitAfterStart = 20 * time.Second
