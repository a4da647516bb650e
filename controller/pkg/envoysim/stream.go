package envoysim

import (
	"fmt"

	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	tcpv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/tcp_proxy/v3"
	udpv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/udp/udp_proxy/v3"
)

// tcpProxy follows TcpProxy: the connection goes to its cluster, or one of
// its weighted clusters.
func (s *Simulator) tcpProxy(f *listenerv3.Filter, req Request, a *Answer) error {
	tp, err := unpack[tcpv3.TcpProxy](f.GetTypedConfig(), "tcp_proxy")
	if err != nil {
		return err
	}
	if err := understand(tp, "stat_prefix", "cluster", "weighted_clusters", "idle_timeout", "access_log", "max_connect_attempts"); err != nil {
		return err
	}
	type choice struct {
		name   string
		weight uint32
	}
	var choices []choice
	if c := tp.GetCluster(); c != "" {
		choices = []choice{{c, 1}}
	}
	for _, wc := range tp.GetWeightedClusters().GetClusters() {
		choices = append(choices, choice{wc.GetName(), wc.GetWeight()})
	}
	var total uint32
	for _, c := range choices {
		total += c.weight
	}
	if total == 0 {
		return fmt.Errorf("tcp_proxy without a cluster")
	}
	for _, c := range choices {
		b := Backend{Cluster: c.name, Weight: c.weight, TotalWeight: total, Endpoints: []string{}}
		if err := s.upstream(&b, 0); err != nil {
			return err
		}
		a.Backends = append(a.Backends, b)
	}
	a.Upstream = pick(a.Backends, req.Seed)
	return nil
}

// udp follows the UDP proxy listener filter with a matcher whose
// on_no_match action routes every datagram to one cluster.
func (s *Simulator) udp(l *listenerv3.Listener, a *Answer) error {
	fs := l.GetListenerFilters()
	if len(fs) != 1 || fs[0].GetName() != udpProxy {
		return errUnsupportedf("UDP listener %s without exactly one udp_proxy listener filter", l.GetName())
	}
	a.Filter = udpProxy
	cfg, err := unpack[udpv3.UdpProxyConfig](fs[0].GetTypedConfig(), "udp_proxy")
	if err != nil {
		return err
	}
	if err := understand(cfg, "stat_prefix", "matcher", "idle_timeout", "access_log"); err != nil {
		return err
	}
	m := cfg.GetMatcher()
	if len(m.GetMatcherList().GetMatchers()) > 0 || m.GetMatcherTree() != nil {
		return errUnsupportedf("udp_proxy matchers other than on_no_match")
	}
	route, err := unpack[udpv3.Route](m.GetOnNoMatch().GetAction().GetTypedConfig(), "udp_proxy route")
	if err != nil {
		return err
	}
	b := Backend{Cluster: route.GetCluster(), Weight: 1, TotalWeight: 1, Endpoints: []string{}}
	if err := s.upstream(&b, 0); err != nil {
		return err
	}
	a.Backends = []Backend{b}
	a.Upstream = &a.Backends[0]
	return nil
}
