package xdsserver

import (
	"context"
	"slices"
	"strings"
	"testing"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"isobar.dev/api/imagetag"
	"isobar.dev/controller/pkg/envoyversion"
	"isobar.dev/controller/pkg/offline"
	"isobar.dev/controller/pkg/translate"
	"isobar.dev/controller/pkg/xds"
)

// Envoys of each release are served what it knows: the retry budget's
// interval (Envoy v1.39) goes to v1.39 and later, not to v1.37 or v1.38,
// over state of the world and delta alike, also after a change; an Envoy
// older than v1.37 is refused.
func TestServedByEnvoyRelease(t *testing.T) {
	pki := newTestPKI(t)
	s, addr := serve(t, pki)
	r := translated(t, "../offline/testdata/backend-traffic.in.yaml")
	if _, err := s.Update(r); err != nil {
		t.Fatal(err)
	}
	node := func(minor uint32) *corev3.Node {
		return &corev3.Node{Id: "envoy", UserAgentName: "envoy", UserAgentVersionType: &corev3.Node_UserAgentBuildVersion{
			UserAgentBuildVersion: &corev3.BuildVersion{Version: &typev3.SemanticVersion{MajorNumber: 1, MinorNumber: minor, Patch: 3}}}}
	}
	intervals := func(t *testing.T, resources []*anypb.Any) int {
		t.Helper()
		n := 0
		for _, a := range resources {
			c := &clusterv3.Cluster{}
			if err := a.UnmarshalTo(c); err != nil {
				t.Fatal(err)
			}
			for _, th := range c.GetCircuitBreakers().GetThresholds() {
				if th.GetRetryBudget().GetBudgetInterval() != nil {
					n++
				}
			}
		}
		return n
	}
	client := discoveryv3.NewAggregatedDiscoveryServiceClient(dial(t, pki, addr, true))
	for _, tc := range []struct {
		minor uint32
		want  bool // the interval sent
	}{{37, false}, {38, false}, {39, true}, {40, true}} {
		sotw, err := client.StreamAggregatedResources(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if err := sotw.Send(&discoveryv3.DiscoveryRequest{Node: node(tc.minor), TypeUrl: resourcev3.ClusterType}); err != nil {
			t.Fatal(err)
		}
		resp, err := sotw.Recv()
		if err != nil {
			t.Fatal(err)
		}
		if got := intervals(t, resp.Resources); (got > 0) != tc.want {
			t.Errorf("Envoy v1.%d over state of the world: %d clusters with a retry budget interval, want some: %t", tc.minor, got, tc.want)
		}
		delta, err := client.DeltaAggregatedResources(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if err := delta.Send(&discoveryv3.DeltaDiscoveryRequest{Node: node(tc.minor), TypeUrl: resourcev3.ClusterType, ResourceNamesSubscribe: []string{"*"}}); err != nil {
			t.Fatal(err)
		}
		dresp, err := delta.Recv()
		if err != nil {
			t.Fatal(err)
		}
		var any []*anypb.Any
		for _, res := range dresp.Resources {
			any = append(any, res.Resource)
		}
		if got := intervals(t, any); (got > 0) != tc.want {
			t.Errorf("Envoy v1.%d over delta: %d clusters with a retry budget interval, want some: %t", tc.minor, got, tc.want)
		}
		// A change reaches every release, as it knows it: the stream
		// was subscribed before it, with no node on the next request.
		if err := sotw.Send(&discoveryv3.DiscoveryRequest{TypeUrl: resourcev3.ClusterType, VersionInfo: resp.VersionInfo, ResponseNonce: resp.Nonce}); err != nil {
			t.Fatal(err)
		}
		r2 := translated(t, "../offline/testdata/backend-traffic.in.yaml")
		r2.Clusters = r2.Clusters[:len(r2.Clusters):len(r2.Clusters)]
		for _, c := range r2.Clusters {
			c.ConnectTimeout.Seconds += int64(tc.minor)
		}
		if _, err := s.Update(r2); err != nil {
			t.Fatal(err)
		}
		resp, err = sotw.Recv()
		if err != nil {
			t.Fatal(err)
		}
		if got := intervals(t, resp.Resources); (got > 0) != tc.want {
			t.Errorf("Envoy v1.%d after a change: %d clusters with a retry budget interval, want some: %t", tc.minor, got, tc.want)
		}
		_ = sotw.CloseSend()
		_ = delta.CloseSend()
	}

	old, err := client.StreamAggregatedResources(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if err := old.Send(&discoveryv3.DiscoveryRequest{Node: node(36), TypeUrl: resourcev3.ClusterType}); err != nil {
		t.Fatal(err)
	}
	if _, err := old.Recv(); status.Code(err) != codes.FailedPrecondition || !strings.Contains(err.Error(), "oldest release Isobar supports") {
		t.Errorf("Envoy v1.36: %v, want it refused as older than supported", err)
	}
}

// A field of a route, inside the virtual hosts the translator hands out
// encoded, is left out for an Envoy that lacks it too.
func TestStripSeesEncodedVirtualHosts(t *testing.T) {
	saved := envoyversion.Newer
	t.Cleanup(func() { envoyversion.Newer = saved })
	envoyversion.Newer = append(slices.Clone(saved), envoyversion.Field{
		Name: "envoy.config.route.v3.Route.name", Since: imagetag.Version{Major: 1, Minor: 39}, In: []string{resourcev3.RouteType}})
	res, _, err := offline.LoadFiles([]string{"../offline/testdata/backends.in.yaml"}, "")
	if err != nil {
		t.Fatal(err)
	}
	g := translate.NewTranslator(translate.Options{ControllerName: offline.DefaultControllerName}).Translate(res).Gateways[0]
	encoded, err := xds.NewTranslator(xds.DefaultSettings()).Translate(g)
	if err != nil {
		t.Fatal(err)
	}
	if len(encoded.Routes) == 0 || len(encoded.Routes[0].GetVirtualHosts()) != 0 {
		t.Fatalf("the translator's route configurations are not encoded (%d)", len(encoded.Routes))
	}
	named := func(m proto.Message) int {
		d, err := xds.Decoded(&xds.Resources{Routes: []*routev3.RouteConfiguration{m.(*routev3.RouteConfiguration)}})
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, vh := range d.Routes[0].GetVirtualHosts() {
			for _, rt := range vh.GetRoutes() {
				if rt.GetName() != "" {
					n++
				}
			}
		}
		return n
	}
	if named(encoded.Routes[0]) == 0 {
		t.Fatal("the fixture's routes have no names")
	}
	if got := named(stripper(resourcev3.RouteType, "v1.39")(encoded.Routes[0])); got != 0 {
		t.Errorf("%d routes keep their names for Envoy v1.38", got)
	}
	if stripper(resourcev3.ListenerType, "v1.39") != nil {
		t.Error("listeners are stripped of a route's field")
	}
}
