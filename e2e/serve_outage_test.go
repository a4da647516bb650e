package e2e

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"isobar.dev/e2e/harness"
)

// The API server goes away: the xDS server keeps serving the last
// configuration, also to Envoys that connect meanwhile; when it comes back,
// Envoy and status converge on what changed. A restarted controller gives a
// reconnecting Envoy the same configuration.
func TestServeAPIServerOutageAndRestart(t *testing.T) {
	ns := namespace(t)
	ctx, cancel := harness.Context()
	defer cancel()
	fleet(t, ctx, ns, "web")
	backend(t, ctx, ns, "app", "10.1.2.3")
	create(t, ctx, httpRoute(ns, "app", "app", "web"))
	proxy := harness.NewAPIProxy(t, env)
	s := serveWith(t, proxy.Kubeconfig("isobar-controller-proxied"), ns, "web", nil)
	ads := newADSClient(t, dialXDS(t, s.pki, s.xds), "envoy-0", ns+"/web", xdsTypes...)
	before := map[string]*discoveryv3.DiscoveryResponse{}
	for _, typ := range xdsTypes {
		before[typ] = ads.next(typ, 10*time.Second)
		ads.ack(before[typ])
	}

	proxy.Down()
	// A Envoy that connects during the outage gets the whole configuration.
	late := newADSClient(t, dialXDS(t, s.pki, s.xds), "envoy-1", ns+"/web", xdsTypes...)
	for _, typ := range xdsTypes {
		if got := late.next(typ, 10*time.Second); !sameResources(t, got, before[typ]) {
			t.Errorf("%s during the outage differs from before it", typ)
		}
	}
	var generation int64
	err := retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		hr := &gatewayv1.HTTPRoute{}
		if err := env.Client.Get(ctx, keyOf(ns, "app"), hr); err != nil {
			return err
		}
		hr.Spec.Hostnames = []gatewayv1.Hostname{"after.example.com"}
		err := env.Client.Update(ctx, hr)
		generation = hr.Generation
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Second)
	if p := ads.pending(); len(p) != 0 {
		t.Fatalf("pushed %v while the API server was unreachable", p)
	}
	if exited, err := s.proc.Exited(); exited {
		t.Fatalf("the controller exited while the API server was unreachable: %v\n%s", err, s.proc.Output())
	}

	proxy.Up()
	rds := ads.next(resourcev3.RouteType, 60*time.Second)
	if got := domains(t, rds); !slices.Contains(got, "after.example.com") {
		t.Fatalf("RDS after the outage: %v, want after.example.com", got)
	}
	ads.ack(rds)
	before[resourcev3.RouteType] = rds
	eventually(t, 60*time.Second, "route status at the generation changed during the outage", func() bool {
		hr := &gatewayv1.HTTPRoute{}
		if err := env.Client.Get(ctx, keyOf(ns, "app"), hr); err != nil {
			t.Fatal(err)
		}
		p := routeParent(hr, "web")
		return p != nil && meta.FindStatusCondition(p.Conditions, "Accepted").ObservedGeneration == generation
	})

	// Restart: the same configuration for a reconnecting Envoy.
	if code, err := s.proc.Stop(20 * time.Second); err != nil || code != 0 {
		t.Fatalf("stopping the controller: %d, %v\n%s", code, err, s.proc.Output())
	}
	restarted := serve(t, ns, "web", s.pki)
	again := newADSClient(t, dialXDS(t, s.pki, restarted.xds), "envoy-0", ns+"/web", xdsTypes...)
	for _, typ := range xdsTypes {
		if got := again.next(typ, 10*time.Second); !sameResources(t, got, before[typ]) {
			t.Errorf("%s after the restart differs from before it", typ)
		}
	}
}

// sameResources compares two responses' resources by content, whatever
// their order, version or encoding.
func sameResources(t *testing.T, a, b *discoveryv3.DiscoveryResponse) bool {
	t.Helper()
	decode := func(r *discoveryv3.DiscoveryResponse) []proto.Message {
		var out []proto.Message
		for _, a := range r.Resources {
			m, err := anypb.UnmarshalNew(a, proto.UnmarshalOptions{})
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, m)
		}
		return out
	}
	as, bs := decode(a), decode(b)
	if len(as) != len(bs) {
		return false
	}
	for _, m := range as {
		if !slices.ContainsFunc(bs, func(n proto.Message) bool { return proto.Equal(m, n) }) {
			return false
		}
	}
	return true
}

// Both binaries started while the API server is away (a control plane
// upgrade, a node restarting everything at once) wait for it instead of
// exiting: once it is back, the controller serves its Gateway and the
// operator accepts its GatewayClass, without a restart.
func TestStartedWhileAPIServerAway(t *testing.T) {
	ns := namespace(t)
	ctx, cancel := harness.Context()
	defer cancel()
	fleet(t, ctx, ns, "web")
	backend(t, ctx, ns, "app", "10.1.2.3")
	route := httpRoute(ns, "app", "app", "web")
	route.Spec.Hostnames = []gatewayv1.Hostname{"app.example.com"}
	create(t, ctx, route)
	controller := "isobar.dev/away-" + ns
	class := &gatewayv1.GatewayClass{ObjectMeta: metav1.ObjectMeta{Name: "away-" + ns}, Spec: gatewayv1.GatewayClassSpec{ControllerName: gatewayv1.GatewayController(controller)}}
	create(t, ctx, class)
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), class) })

	proxy := harness.NewAPIProxy(t, env)
	proxy.Down()
	s := startController(t, proxy.Kubeconfig("isobar-controller-away"), ns, "web", nil)
	op, opHealth, _ := startOperatorProcess(t, proxy.Kubeconfig("isobar-operator-away"), controller)
	time.Sleep(5 * time.Second)
	for _, p := range []*harness.Process{s.proc, op} {
		if exited, err := p.Exited(); exited {
			t.Fatalf("%s exited while the API server was away: %v\n%s", p.Name, err, p.Output())
		}
		if out := p.Output(); !strings.Contains(out, "the API server does not answer; waiting for it") {
			t.Errorf("%s does not say it waits for the API server:\n%s", p.Name, out)
		}
	}

	proxy.Up()
	waitReady(t, s.proc, s.health+"/readyz", 60*time.Second)
	waitReady(t, op, opHealth+"/readyz", 60*time.Second)
	ads := newADSClient(t, dialXDS(t, s.pki, s.xds), "envoy-0", ns+"/web", resourcev3.RouteType)
	if got := domains(t, ads.next(resourcev3.RouteType, 30*time.Second)); !slices.Contains(got, "app.example.com") {
		t.Errorf("RDS once the API server is back: %v, want app.example.com", got)
	}
	classCondition(t, ctx, class.Name, "Accepted", metav1.ConditionTrue, "Accepted", "")
}
