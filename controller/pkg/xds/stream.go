package xds

import (
	xdscorev3 "github.com/cncf/xds/go/xds/core/v3"
	matcherv3 "github.com/cncf/xds/go/xds/type/matcher/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	tcpproxyv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/tcp_proxy/v3"
	udpproxyv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/udp/udp_proxy/v3"

	"isobar.dev/controller/pkg/ir"
)

// NoBackendCluster is where a TCP or TLS route with no usable backend sends
// connections: it has no endpoints, so Envoy closes them at once.
const NoBackendCluster = InvalidBackendCluster

func tcpProxy(statPrefix string, d *ir.Destination, s Settings) *listenerv3.Filter {
	p := &tcpproxyv3.TcpProxy{StatPrefix: statPrefix, AccessLog: accessLogs(s, false)}
	switch len(d.Backends) {
	case 0:
		p.ClusterSpecifier = &tcpproxyv3.TcpProxy_Cluster{Cluster: NoBackendCluster}
	case 1:
		p.ClusterSpecifier = &tcpproxyv3.TcpProxy_Cluster{Cluster: d.Backends[0].Cluster}
	default:
		wc := &tcpproxyv3.TcpProxy_WeightedCluster{}
		for _, b := range d.Backends {
			wc.Clusters = append(wc.Clusters, &tcpproxyv3.TcpProxy_WeightedCluster_ClusterWeight{Name: b.Cluster, Weight: b.Weight})
		}
		p.ClusterSpecifier = &tcpproxyv3.TcpProxy_WeightedClusters{WeightedClusters: wc}
	}
	return &listenerv3.Filter{
		Name:       "envoy.filters.network.tcp_proxy",
		ConfigType: &listenerv3.Filter_TypedConfig{TypedConfig: typed(p)},
	}
}

// udpProxy sends every datagram to the destination's one backend: Envoy's
// UDP proxy routes to one cluster, so the first stage makes weighted
// backends one cluster with locality weights (ir.Cluster.Shares).
func udpProxy(statPrefix string, d *ir.Destination, s Settings) *listenerv3.ListenerFilter {
	cluster := NoBackendCluster
	if len(d.Backends) > 0 {
		cluster = d.Backends[0].Cluster
	}
	p := &udpproxyv3.UdpProxyConfig{
		StatPrefix: statPrefix,
		AccessLog:  accessLogs(s, true),
		RouteSpecifier: &udpproxyv3.UdpProxyConfig_Matcher{Matcher: &matcherv3.Matcher{
			OnNoMatch: &matcherv3.Matcher_OnMatch{OnMatch: &matcherv3.Matcher_OnMatch_Action{Action: &xdscorev3.TypedExtensionConfig{
				Name:        "route",
				TypedConfig: typed(&udpproxyv3.Route{Cluster: cluster}),
			}}},
		}},
	}
	return &listenerv3.ListenerFilter{
		Name:       "envoy.filters.udp_listener.udp_proxy",
		ConfigType: &listenerv3.ListenerFilter_TypedConfig{TypedConfig: typed(p)},
	}
}
