package envoysim

import (
	"math"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
)

// SlowStart is a cluster's slow start: an endpoint added less than Window
// ago gets a share of requests that grows with its age (see Weight).
type SlowStart struct {
	Window           time.Duration `json:"window"`
	Aggression       float64       `json:"aggression"`
	MinWeightPercent float64       `json:"minWeightPercent"`
}

func slowStartOf(c *clusterv3.Cluster) (*SlowStart, error) {
	var cfg *clusterv3.Cluster_SlowStartConfig
	switch lb := c.GetLbConfig().(type) {
	case nil:
		return nil, nil
	case *clusterv3.Cluster_RoundRobinLbConfig_:
		if err := understand(lb.RoundRobinLbConfig, "slow_start_config"); err != nil {
			return nil, err
		}
		cfg = lb.RoundRobinLbConfig.GetSlowStartConfig()
	case *clusterv3.Cluster_LeastRequestLbConfig_:
		if err := understand(lb.LeastRequestLbConfig, "slow_start_config"); err != nil {
			return nil, err
		}
		cfg = lb.LeastRequestLbConfig.GetSlowStartConfig()
	default:
		return nil, errUnsupportedf("lb_config %T", lb)
	}
	if cfg == nil {
		return nil, nil
	}
	if err := understand(cfg, "slow_start_window", "aggression", "min_weight_percent"); err != nil {
		return nil, err
	}
	out := &SlowStart{Window: cfg.GetSlowStartWindow().AsDuration(), Aggression: 1, MinWeightPercent: 10}
	if a := cfg.GetAggression(); a != nil {
		out.Aggression = a.GetDefaultValue()
	}
	if p := cfg.GetMinWeightPercent(); p != nil {
		out.MinWeightPercent = p.GetValue()
	}
	return out, nil
}

// Weight is the share of its weight an endpoint added age ago gets, as
// Envoy's EdfLoadBalancerBase computes it: (age/window)^(1/aggression),
// at least the minimum weight, and all of it once the window is over.
func (s *SlowStart) Weight(age time.Duration) float64 {
	if s == nil || age >= s.Window {
		return 1
	}
	f := math.Pow(max(age.Seconds(), 0)/s.Window.Seconds(), 1/s.Aggression)
	return max(f, s.MinWeightPercent/100)
}

// PickLive is Pick among the endpoints healthy says are healthy (all,
// when healthy is nil), each weighted by its slow start for the age age
// gives it; "" when none is healthy.
func (b *Backend) PickLive(seed uint64, healthy func(endpoint string) bool, age func(endpoint string) time.Duration) string {
	if healthy == nil {
		healthy = func(string) bool { return true }
	}
	if b.SlowStart == nil || age == nil || len(b.Localities) > 0 {
		return b.PickHealthy(seed, healthy)
	}
	var eps []string
	for _, e := range b.Endpoints {
		if healthy(e) {
			eps = append(eps, e)
		}
	}
	if e := b.sessionEndpoint(eps); e != "" {
		return e
	}
	var total float64
	weights := make([]float64, len(eps))
	for i, e := range eps {
		weights[i] = b.SlowStart.Weight(age(e))
		total += weights[i]
	}
	x := float64(seed%1_000_000) / 1_000_000 * total
	for i, w := range weights {
		if x < w {
			return eps[i]
		}
		x -= w
	}
	return ""
}

// EndpointsOf are the endpoints of an assignment Envoy may send requests
// to, as Backend.Endpoints names them.
func EndpointsOf(cla *endpointv3.ClusterLoadAssignment) ([]string, error) { return endpoints(cla) }
