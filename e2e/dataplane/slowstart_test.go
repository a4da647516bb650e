package dataplane

import (
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
)

// The endpoints of a cluster's first assignment are old, as Envoy's are
// for slow start; one added later is as old as its assignment, and one
// that leaves and comes back is new again.
func TestEndpointAge(t *testing.T) {
	e := newEnvoy(&Bootstrap{Node: &corev3.Node{Id: "test"}})
	assign := func(ips ...string) {
		t.Helper()
		cla := &endpointv3.ClusterLoadAssignment{ClusterName: "app", Endpoints: []*endpointv3.LocalityLbEndpoints{{}}}
		for _, ip := range ips {
			cla.Endpoints[0].LbEndpoints = append(cla.Endpoints[0].LbEndpoints, &endpointv3.LbEndpoint{HostIdentifier: &endpointv3.LbEndpoint_Endpoint{Endpoint: &endpointv3.Endpoint{
				Address: &corev3.Address{Address: &corev3.Address_SocketAddress{SocketAddress: &corev3.SocketAddress{Address: ip, PortSpecifier: &corev3.SocketAddress_PortValue{PortValue: 80}}}},
			}}})
		}
		err := e.apply(&discoveryv3.DeltaDiscoveryResponse{TypeUrl: resourcev3.EndpointType, Resources: []*discoveryv3.Resource{{Name: "app", Version: ips[len(ips)-1], Resource: typed(t, cla)}}})
		if err != nil {
			t.Fatal(err)
		}
	}
	old := func(ep string) bool { return e.EndpointAge("app", ep) > 24*time.Hour }
	assign("10.0.0.1", "10.0.0.2")
	if !old("10.0.0.1:80") || !old("10.0.0.2:80") {
		t.Errorf("the first assignment's endpoints are in slow start: %s, %s", e.EndpointAge("app", "10.0.0.1:80"), e.EndpointAge("app", "10.0.0.2:80"))
	}
	assign("10.0.0.1", "10.0.0.2", "10.0.0.3")
	if old("10.0.0.3:80") || !old("10.0.0.1:80") {
		t.Errorf("after 10.0.0.3 came: ages %s (new), %s (old)", e.EndpointAge("app", "10.0.0.3:80"), e.EndpointAge("app", "10.0.0.1:80"))
	}
	assign("10.0.0.2", "10.0.0.3")
	assign("10.0.0.1", "10.0.0.2", "10.0.0.3")
	if old("10.0.0.1:80") {
		t.Errorf("10.0.0.1 left and came back: age %s, want new", e.EndpointAge("app", "10.0.0.1:80"))
	}
}
