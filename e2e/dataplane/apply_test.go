package dataplane

import (
	"strings"
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"google.golang.org/protobuf/proto"
)

// What Envoy refuses on receipt is NACKed and not applied: a resource
// that unmarshals but breaks its validation rules (a virtual host without a
// name) or Envoy's load-time rules (a regex RE2 does not compile), beside
// one that is fine, keeps the whole response out.
func TestApplyRefusesWhatEnvoyRefuses(t *testing.T) {
	good := &routev3.RouteConfiguration{Name: "good", VirtualHosts: []*routev3.VirtualHost{{Name: "all", Domains: []string{"*"}}}}
	for _, tc := range []struct {
		name string
		bad  *routev3.RouteConfiguration
		want string
	}{
		{"validation rule", &routev3.RouteConfiguration{Name: "bad", VirtualHosts: []*routev3.VirtualHost{{Domains: []string{"*"}}}}, "Name"},
		{"load-time rule", &routev3.RouteConfiguration{Name: "bad", VirtualHosts: []*routev3.VirtualHost{{Name: "all", Domains: []string{"*"},
			Routes: []*routev3.Route{{Match: &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_SafeRegex{SafeRegex: &matcherv3.RegexMatcher{Regex: "(("}}},
				Action: &routev3.Route_DirectResponse{DirectResponse: &routev3.DirectResponseAction{Status: 200}}}}}}}, "does not compile"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnvoy(&Bootstrap{Node: &corev3.Node{Id: "test"}})
			err := e.apply(response(t, good, tc.bad))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("apply: %v; want a NACK naming %q", err, tc.want)
			}
			if n := len(e.resources[resourcev3.RouteType]); n != 0 {
				t.Errorf("%d route configurations applied from a NACKed response", n)
			}
			if err := e.apply(response(t, good)); err != nil {
				t.Fatalf("apply of a valid response: %v", err)
			}
		})
	}
}

func response(t *testing.T, rcs ...*routev3.RouteConfiguration) *discoveryv3.DeltaDiscoveryResponse {
	r := &discoveryv3.DeltaDiscoveryResponse{TypeUrl: resourcev3.RouteType, Nonce: "1"}
	for _, rc := range rcs {
		r.Resources = append(r.Resources, &discoveryv3.Resource{Name: rc.GetName(), Version: "1", Resource: typed(t, proto.Clone(rc))})
	}
	return r
}
