package xdsserver

import (
	"context"
	"slices"
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"

	"isobar.dev/api/envoyruntime"
)

// Holding counts the Envoys that serve a configuration: one that has
// acknowledged what was served at a mark keeps holding it while a newer
// change is in flight, and an Envoy that joins holds nothing until it has
// acknowledged its first push, so neither changes the count of the
// Envoys already serving.
func TestHoldingIgnoresChangesInFlightAndJoiningEnvoys(t *testing.T) {
	pki := newTestPKI(t)
	s, addr := serve(t, pki)
	fixture := translated(t, "../offline/testdata/backends.in.yaml")
	if _, err := s.Update(fixture); err != nil {
		t.Fatal(err)
	}
	first := s.Mark()
	type client struct {
		ads  discoveryv3.AggregatedDiscoveryService_StreamAggregatedResourcesClient
		node *corev3.Node
	}
	connect := func(id string) client {
		ads, err := discoveryv3.NewAggregatedDiscoveryServiceClient(dial(t, pki, addr, true)).StreamAggregatedResources(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		return client{ads, &corev3.Node{Id: id, Cluster: "default/web"}}
	}
	send := func(c client, version, nonce string) {
		t.Helper()
		if err := c.ads.Send(&discoveryv3.DiscoveryRequest{Node: c.node, TypeUrl: resourcev3.ClusterType, VersionInfo: version, ResponseNonce: nonce}); err != nil {
			t.Fatal(err)
		}
	}
	recv := func(c client) *discoveryv3.DiscoveryResponse {
		t.Helper()
		resp, err := c.ads.Recv()
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	holding := func(what string, m Mark, want int) {
		t.Helper()
		waitFor(t, what, func() bool { return s.Holding(m) == want })
	}

	one := connect("envoy-1")
	send(one, "", "")
	cds := recv(one)
	holding("a connected Envoy that has not acknowledged to hold nothing", first, 0)
	send(one, cds.VersionInfo, cds.Nonce)
	holding("the acknowledged configuration to be held", first, 1)

	// A change pushed and not yet acknowledged.
	r := translated(t, "../offline/testdata/backends.in.yaml")
	gone := r.Clusters[0]
	r.Clusters = r.Clusters[1:]
	r.Endpoints = slices.DeleteFunc(slices.Clone(r.Endpoints), func(e *endpointv3.ClusterLoadAssignment) bool { return e.ClusterName == gone.Name })
	if _, err := s.Update(r); err != nil {
		t.Fatal(err)
	}
	second := s.Mark()
	cds2 := recv(one)
	if s.Holding(first) != 1 {
		t.Errorf("with a change in flight, %d Envoys hold the earlier configuration, want 1", s.Holding(first))
	}
	if s.Holding(second) != 0 {
		t.Errorf("before its ACK, %d Envoys hold the newer configuration, want 0", s.Holding(second))
	}

	// Another Envoy joins: it is sent its first push and has not answered.
	two := connect("envoy-2")
	send(two, "", "")
	cds3 := recv(two)
	if st := s.Status(); st.Connected != 2 {
		t.Fatalf("connected = %d, want 2", st.Connected)
	}
	if s.Holding(first) != 1 {
		t.Errorf("with an Envoy joining, %d Envoys hold the configuration, want 1", s.Holding(first))
	}

	send(one, cds2.VersionInfo, cds2.Nonce)
	send(two, cds3.VersionInfo, cds3.Nonce)
	holding("both Envoys to hold the newer configuration", second, 2)
	holding("a newer configuration to count as holding the earlier one", first, 2)
}

// An Envoy asks for its runtime layer, and acknowledges it, before it
// asks for anything else: holding that layer alone is not serving, so it
// neither counts as holding nor gives back its first-push slot.
func TestRuntimeLayerAloneIsNotServing(t *testing.T) {
	pki := newTestPKI(t)
	s, addr := serve(t, pki)
	if _, err := s.Update(translated(t, "../offline/testdata/backends.in.yaml")); err != nil {
		t.Fatal(err)
	}
	m := s.Mark()
	ads, err := discoveryv3.NewAggregatedDiscoveryServiceClient(dial(t, pki, addr, true)).StreamAggregatedResources(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	node := &corev3.Node{Id: "envoy-1", Cluster: "default/web"}
	ask := func(typ string, names []string, version, nonce string) *discoveryv3.DiscoveryResponse {
		t.Helper()
		if err := ads.Send(&discoveryv3.DiscoveryRequest{Node: node, TypeUrl: typ, ResourceNames: names, VersionInfo: version, ResponseNonce: nonce}); err != nil {
			t.Fatal(err)
		}
		if version != "" {
			return nil
		}
		resp, err := ads.Recv()
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	rt := ask(resourcev3.RuntimeType, []string{envoyruntime.Layer}, "", "")
	if len(rt.GetResources()) != 1 {
		t.Fatalf("runtime response has %d resources, want the layer", len(rt.GetResources()))
	}
	ask(resourcev3.RuntimeType, []string{envoyruntime.Layer}, rt.VersionInfo, rt.Nonce)
	waitFor(t, "the runtime ACK to be counted", func() bool { return s.Counters().ACKs == 1 })
	if n := s.Holding(m); n != 0 {
		t.Errorf("an Envoy holding the runtime layer alone counts as holding the configuration (%d)", n)
	}
	s.mu.Lock()
	for _, str := range s.streams {
		if str.firstPushDone() {
			t.Error("an Envoy holding the runtime layer alone has done its first push")
		}
	}
	s.mu.Unlock()
	cds := ask(resourcev3.ClusterType, nil, "", "")
	ask(resourcev3.ClusterType, nil, cds.VersionInfo, cds.Nonce)
	waitFor(t, "the Envoy to hold the configuration once it has its clusters", func() bool { return s.Holding(m) == 1 })
}
