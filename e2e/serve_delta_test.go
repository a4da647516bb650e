package e2e

import (
	"context"
	"slices"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"isobar.dev/e2e/harness"
)

// The fleet's bootstrap asks for delta ADS, so this is how real Envoys
// talk to the controller: subscribed the way Envoy subscribes (listeners
// and clusters by wildcard, route configurations and endpoint assignments
// by name), they get the configuration, their ACKs make the Gateway
// Programmed, and a change sends the one changed resource and nothing else.
func TestServeDeltaADS(t *testing.T) {
	ctx, cancel := harness.Context()
	defer cancel()
	ns, slice, s := appFleet(t, ctx)

	sctx, stop := context.WithCancel(context.Background())
	t.Cleanup(stop)
	stream, err := discoveryv3.NewAggregatedDiscoveryServiceClient(dialXDS(t, s.pki, s.xds)).DeltaAggregatedResources(sctx)
	if err != nil {
		t.Fatal(err)
	}
	responses := make(chan *discoveryv3.DeltaDiscoveryResponse, 64)
	go func() {
		for {
			r, err := stream.Recv()
			if err != nil {
				close(responses)
				return
			}
			responses <- r
		}
	}()
	send := func(r *discoveryv3.DeltaDiscoveryRequest) {
		t.Helper()
		if err := stream.Send(r); err != nil {
			t.Fatal(err)
		}
	}
	next := func(timeout time.Duration) *discoveryv3.DeltaDiscoveryResponse {
		t.Helper()
		select {
		case r, ok := <-responses:
			if !ok {
				t.Fatal("the delta stream ended")
			}
			return r
		case <-time.After(timeout):
			return nil
		}
	}
	node := &corev3.Node{Id: "envoy-0", Cluster: ns + "/web"}
	cluster := ns + "/app/8080"
	send(&discoveryv3.DeltaDiscoveryRequest{Node: node, TypeUrl: resourcev3.ListenerType})
	send(&discoveryv3.DeltaDiscoveryRequest{TypeUrl: resourcev3.ClusterType})
	send(&discoveryv3.DeltaDiscoveryRequest{TypeUrl: resourcev3.EndpointType, ResourceNamesSubscribe: []string{cluster}})
	send(&discoveryv3.DeltaDiscoveryRequest{TypeUrl: resourcev3.RouteType, ResourceNamesSubscribe: []string{"http_80"}})

	// Each type's first response holds its resources; ACK them all.
	got := map[string][]string{}
	for len(got) < 4 {
		r := next(10 * time.Second)
		if r == nil {
			t.Fatalf("only %v arrived over delta ADS", got)
		}
		for _, res := range r.Resources {
			got[r.TypeUrl] = append(got[r.TypeUrl], res.Name)
		}
		send(&discoveryv3.DeltaDiscoveryRequest{TypeUrl: r.TypeUrl, ResponseNonce: r.Nonce})
	}
	want := map[string][]string{
		resourcev3.ListenerType: {"http_80"}, resourcev3.ClusterType: {cluster},
		resourcev3.EndpointType: {cluster}, resourcev3.RouteType: {"http_80"},
	}
	for typ, names := range want {
		if !slices.Equal(got[typ], names) {
			t.Errorf("%s: got %v, want %v", typ, got[typ], names)
		}
	}
	waitGatewayCondition(t, ctx, ns, "web", "Programmed", metav1.ConditionTrue, "Programmed", "")

	// only waits for the response a change causes and checks that it is
	// the one resource, of one type, and that nothing else follows.
	only := func(what, typ, name string) *discoveryv3.Resource {
		t.Helper()
		r := next(10 * time.Second)
		if r == nil {
			t.Fatalf("%s: nothing arrived", what)
		}
		send(&discoveryv3.DeltaDiscoveryRequest{TypeUrl: r.TypeUrl, ResponseNonce: r.Nonce})
		if r.TypeUrl != typ || len(r.Resources) != 1 || r.Resources[0].Name != name || len(r.RemovedResources) != 0 {
			t.Fatalf("%s: got %s with %d resources and %v removed, want %s %s alone", what, r.TypeUrl, len(r.Resources), r.RemovedResources, typ, name)
		}
		if extra := next(time.Second); extra != nil {
			t.Fatalf("%s: a %s response followed", what, extra.TypeUrl)
		}
		return r.Resources[0]
	}

	hr := &gatewayv1.HTTPRoute{}
	if err := env.Client.Get(ctx, keyOf(ns, "app"), hr); err != nil {
		t.Fatal(err)
	}
	hr.Spec.Hostnames = []gatewayv1.Hostname{"app.example.com"}
	if err := env.Client.Update(ctx, hr); err != nil {
		t.Fatal(err)
	}
	rc := &routev3.RouteConfiguration{}
	if err := only("a route change", resourcev3.RouteType, "http_80").Resource.UnmarshalTo(rc); err != nil {
		t.Fatal(err)
	}
	var domains []string
	for _, vh := range rc.VirtualHosts {
		domains = append(domains, vh.Domains...)
	}
	if !slices.Contains(domains, "app.example.com") {
		t.Errorf("route configuration domains %v, want app.example.com", domains)
	}

	if err := env.Client.Get(ctx, keyOf(ns, slice.Name), slice); err != nil {
		t.Fatal(err)
	}
	slice.Endpoints = []discoveryv1.Endpoint{{Addresses: []string{"10.1.2.4"}}}
	if err := env.Client.Update(ctx, slice); err != nil {
		t.Fatal(err)
	}
	cla := &endpointv3.ClusterLoadAssignment{}
	if err := only("an endpoint change", resourcev3.EndpointType, cluster).Resource.UnmarshalTo(cla); err != nil {
		t.Fatal(err)
	}
	if eps := cla.GetEndpoints(); len(eps) != 1 || len(eps[0].LbEndpoints) != 1 ||
		eps[0].LbEndpoints[0].GetEndpoint().GetAddress().GetSocketAddress().GetAddress() != "10.1.2.4" {
		t.Errorf("endpoints after the change: %v, want 10.1.2.4 alone", eps)
	}
}
