package envoyrules

import (
	"strings"
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

func add(name string) []*corev3.HeaderValueOption {
	return []*corev3.HeaderValueOption{{Header: &corev3.HeaderValue{Key: name, Value: "v"}}}
}

func TestRouteConfiguration(t *testing.T) {
	route := func(r *routev3.Route) *routev3.RouteConfiguration {
		return &routev3.RouteConfiguration{Name: "rc", VirtualHosts: []*routev3.VirtualHost{{Name: "vh", Domains: []string{"a.example.com"}, Routes: []*routev3.Route{r}}}}
	}
	weighted := func(c *routev3.WeightedCluster_ClusterWeight) *routev3.Route {
		return &routev3.Route{Name: "r", Action: &routev3.Route_Route{Route: &routev3.RouteAction{ClusterSpecifier: &routev3.RouteAction_WeightedClusters{
			WeightedClusters: &routev3.WeightedCluster{Clusters: []*routev3.WeightedCluster_ClusterWeight{c}}}}}}
	}
	for _, tc := range []struct {
		name string
		rc   *routev3.RouteConfiguration
		want string // "" for valid
	}{
		{"plain headers", route(&routev3.Route{Name: "r", RequestHeadersToAdd: add("x-a"), ResponseHeadersToRemove: []string{"x-b"}}), ""},
		{"set host on a route", route(&routev3.Route{Name: "r", RequestHeadersToAdd: add("Host")}), `header "Host" may not be modified`},
		{"remove host on a route", route(&routev3.Route{Name: "r", RequestHeadersToRemove: []string{"host"}}), `header "host" may not be removed`},
		{"pseudo-header on a response", route(&routev3.Route{Name: "r", ResponseHeadersToAdd: add(":status")}), `header ":status" may not be modified`},
		{"host on a weighted cluster", route(weighted(&routev3.WeightedCluster_ClusterWeight{Name: "c", Weight: wrapperspb.UInt32(1), RequestHeadersToAdd: add("host")})), "weighted cluster c"},
		{"host on a virtual host", &routev3.RouteConfiguration{Name: "rc", VirtualHosts: []*routev3.VirtualHost{{Name: "vh", Domains: []string{"*"}, RequestHeadersToRemove: []string{":path"}}}}, "virtual host vh"},
		{"host on the configuration", &routev3.RouteConfiguration{Name: "rc", ResponseHeadersToAdd: add("HOST")}, "route configuration rc"},
		{"duplicate domains", &routev3.RouteConfiguration{Name: "rc", VirtualHosts: []*routev3.VirtualHost{{Name: "one", Domains: []string{"a.example.com"}}, {Name: "two", Domains: []string{"A.example.com"}}}},
			"also in virtual host one"},
		{"bad regex", route(&routev3.Route{Name: "r", Match: &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_SafeRegex{SafeRegex: &matcherv3.RegexMatcher{Regex: "/(unclosed"}}}}), "does not compile"},
		{"good regex", route(&routev3.Route{Name: "r", Match: &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_SafeRegex{SafeRegex: &matcherv3.RegexMatcher{Regex: "/v[0-9]+/.*"}}}}), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := RouteConfiguration(tc.rc)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestListener(t *testing.T) {
	chain := func(name string, sni ...string) *listenerv3.FilterChain {
		return &listenerv3.FilterChain{Name: name, FilterChainMatch: &listenerv3.FilterChainMatch{ServerNames: sni}}
	}
	if err := Listener(&listenerv3.Listener{Name: "l", FilterChains: []*listenerv3.FilterChain{chain("a", "a.example.com"), chain("b", "b.example.com")}}); err != nil {
		t.Errorf("distinct matches refused: %v", err)
	}
	err := Listener(&listenerv3.Listener{Name: "l", FilterChains: []*listenerv3.FilterChain{chain("a", "a.example.com"), chain("b", "a.example.com")}})
	if err == nil || !strings.Contains(err.Error(), `filter chains "a" and "b" have the same match`) {
		t.Errorf("error %v, want the same match refused", err)
	}
}
