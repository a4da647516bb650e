package envoysim

import (
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// CircuitBreakers are a cluster's limits at the default priority, Envoy's
// defaults where the cluster sets none: connections, requests waiting for
// a connection, requests and retries at once, and connections to one
// endpoint (0: no limit). A request over a limit gets 503 at once, with
// x-envoy-overloaded; a retry over max retries is not made.
type CircuitBreakers struct {
	MaxConnections        uint32 `json:"maxConnections"`
	MaxPendingRequests    uint32 `json:"maxPendingRequests"`
	MaxRequests           uint32 `json:"maxRequests"`
	MaxRetries            uint32 `json:"maxRetries"`
	PerHostMaxConnections uint32 `json:"perHostMaxConnections,omitempty"`
	// RetryBudget, when set, limits the retries at once instead of
	// MaxRetries: to Percent of the requests started in the last
	// Interval, and never below MinRetries.
	RetryBudget *RetryBudget `json:"retryBudget,omitempty"`
}

// RetryBudget is a cluster's retry budget (Envoy's circuit breaker
// retry_budget).
type RetryBudget struct {
	Percent    float64       `json:"percent"`
	Interval   time.Duration `json:"interval"`
	MinRetries uint32        `json:"minRetries"`
}

// Allows reports whether a retry may start with retries going, when
// started requests began in the budget's interval (or, without an
// interval, are active).
func (b *RetryBudget) Allows(retries, started int) bool {
	return retries < max(int(b.MinRetries), int(b.Percent*float64(started)/100))
}

// Envoy's defaults (circuit_breaker.proto).
const (
	defaultMaxConnections     = 1024
	defaultMaxPendingRequests = 1024
	defaultMaxRequests        = 1024
	defaultMaxRetries         = 3
)

func circuitBreakersOf(c *clusterv3.Cluster) (*CircuitBreakers, error) {
	out := &CircuitBreakers{MaxConnections: defaultMaxConnections, MaxPendingRequests: defaultMaxPendingRequests,
		MaxRequests: defaultMaxRequests, MaxRetries: defaultMaxRetries}
	cb := c.GetCircuitBreakers()
	if cb == nil {
		return out, nil
	}
	if err := understand(cb, "thresholds", "per_host_thresholds"); err != nil {
		return nil, err
	}
	set := func(v *wrapperspb.UInt32Value, into *uint32) {
		if v != nil {
			*into = v.GetValue()
		}
	}
	for _, t := range cb.GetThresholds() {
		if err := understand(t, "priority", "max_connections", "max_pending_requests", "max_requests", "max_retries", "track_remaining", "retry_budget"); err != nil {
			return nil, err
		}
		if t.GetPriority() != corev3.RoutingPriority_DEFAULT {
			continue // every route here is of the default priority
		}
		if rb := t.GetRetryBudget(); rb != nil {
			if err := understand(rb, "budget_percent", "budget_interval", "min_retry_concurrency"); err != nil {
				return nil, err
			}
			// Envoy's defaults: 20%, only the active requests, 3.
			out.RetryBudget = &RetryBudget{Percent: 20, MinRetries: 3}
			if p := rb.GetBudgetPercent(); p != nil {
				out.RetryBudget.Percent = p.GetValue()
			}
			out.RetryBudget.Interval = rb.GetBudgetInterval().AsDuration()
			if m := rb.GetMinRetryConcurrency(); m != nil {
				out.RetryBudget.MinRetries = m.GetValue()
			}
		}
		set(t.GetMaxConnections(), &out.MaxConnections)
		set(t.GetMaxPendingRequests(), &out.MaxPendingRequests)
		set(t.GetMaxRequests(), &out.MaxRequests)
		set(t.GetMaxRetries(), &out.MaxRetries)
	}
	for _, t := range cb.GetPerHostThresholds() {
		// Envoy honours only max_connections per host.
		if err := understand(t, "priority", "max_connections", "track_remaining"); err != nil {
			return nil, err
		}
		if t.GetPriority() == corev3.RoutingPriority_DEFAULT {
			set(t.GetMaxConnections(), &out.PerHostMaxConnections)
		}
	}
	return out, nil
}
