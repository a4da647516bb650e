package dataplane

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"isobar.dev/controller/pkg/envoysim"
)

// health runs the clusters' health checks against their endpoints, as
// Envoy's active health checking does, and says which endpoints may take
// requests.
type health struct {
	p  *proxy
	mu sync.Mutex
	// clusters are the checked clusters, by name.
	clusters map[string]*checkedCluster
}

// checkedCluster is one cluster's checker. key is its check as
// configured: a cluster whose check changes gets a new checker.
type checkedCluster struct {
	key    string
	check  envoysim.HealthCheck
	target target
	cancel context.CancelFunc
	// warm is closed when the first round of checks is done: Envoy sends
	// a cluster no request before.
	warm chan struct{}

	mu    sync.Mutex
	hosts map[string]*hostHealth
}

// hostHealth is an endpoint's health: pending until its first check,
// then healthy or not, with the successes or failures in a row.
type hostHealth struct {
	checked, healthy    bool
	successes, failures uint32
	// address is where checks go: the endpoint, or its health port.
	address string
}

// sync starts the checks of the clusters there are, with their
// endpoints, and stops those of clusters gone or changed.
func (h *health) sync(ctx context.Context, sim *envoysim.Simulator) {
	backends := sim.HealthChecked()
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.clusters == nil {
		h.clusters = map[string]*checkedCluster{}
	}
	want := map[string]bool{}
	for _, b := range backends {
		want[b.Cluster] = true
		key := fmt.Sprintf("%+v %+v %t", *b.HealthCheck, b.TLS, b.HTTP2)
		c := h.clusters[b.Cluster]
		if c != nil && c.key != key {
			c.cancel()
			c = nil
		}
		if c == nil {
			c = &checkedCluster{key: key, check: *b.HealthCheck, warm: make(chan struct{}), hosts: map[string]*hostHealth{},
				target: target{cluster: b.Cluster, http2: b.HealthCheck.HTTP2, tls: b.TLS,
					request: &envoysim.HTTPRequest{Method: http.MethodGet, Scheme: "http", Authority: b.HealthCheck.Host, Path: b.HealthCheck.Path}}}
			cctx, cancel := context.WithCancel(ctx)
			c.cancel = cancel
			h.clusters[b.Cluster] = c
			go h.run(cctx, c)
		}
		c.mu.Lock()
		now := map[string]bool{}
		for _, e := range b.Endpoints {
			now[e] = true
			if c.hosts[e] == nil {
				c.hosts[e] = &hostHealth{}
			}
			c.hosts[e].address = b.HealthAddress(e)
		}
		for e := range c.hosts {
			if !now[e] {
				delete(c.hosts, e)
			}
		}
		c.mu.Unlock()
	}
	for name, c := range h.clusters {
		if !want[name] {
			c.cancel()
			delete(h.clusters, name)
		}
	}
}

// run checks every endpoint of a cluster every interval.
func (h *health) run(ctx context.Context, c *checkedCluster) {
	for first := true; ; first = false {
		c.mu.Lock()
		hosts := make(map[string]string, len(c.hosts))
		for e, hh := range c.hosts {
			hosts[e] = hh.address
		}
		c.mu.Unlock()
		var wg sync.WaitGroup
		for e, address := range hosts {
			wg.Add(1)
			go func() {
				defer wg.Done()
				ok := h.probe(ctx, c, address)
				if ctx.Err() == nil {
					c.record(e, ok)
				}
			}()
		}
		wg.Wait()
		if first {
			close(c.warm)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(c.check.Interval):
		}
	}
}

// probe checks an endpoint once, at address: an HTTP GET whose status the
// check expects, or a TCP connection, within the check's timeout.
func (h *health) probe(ctx context.Context, c *checkedCluster, address string) bool {
	ctx, cancel := context.WithTimeout(ctx, c.check.Timeout)
	defer cancel()
	if !c.check.HTTP {
		conn, err := h.p.upstream(ctx, "tcp", address)
		if err != nil {
			return false
		}
		conn.Close()
		return true
	}
	sim, err := h.p.envoy.Simulator()
	if err != nil {
		return false
	}
	resp, err := h.p.attempt(ctx, sim, c.target, address, nil)
	if err != nil {
		return false
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return c.check.Passes(resp.StatusCode)
}

// record counts a check's result: a pending endpoint takes its first
// result, a healthy one goes after Unhealthy failures in a row, an
// unhealthy one comes back after Healthy successes in a row.
func (c *checkedCluster) record(endpoint string, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	hh := c.hosts[endpoint]
	if hh == nil {
		return
	}
	if ok {
		hh.successes, hh.failures = hh.successes+1, 0
	} else {
		hh.failures, hh.successes = hh.failures+1, 0
	}
	switch {
	case !hh.checked:
		hh.checked, hh.healthy = true, ok
	case hh.healthy && hh.failures >= max(c.check.Unhealthy, 1):
		hh.healthy = false
	case !hh.healthy && hh.successes >= max(c.check.Healthy, 1):
		hh.healthy = true
	}
}

// pick is the endpoint a request to backend b goes to: among the healthy
// ones when the cluster is checked, once its first round of checks is
// done, new ones ramped up by the cluster's slow start; "" when there is
// none.
func (h *health) pick(ctx context.Context, b *envoysim.Backend, seed uint64) string {
	age := func(e string) time.Duration { return h.p.envoy.EndpointAge(b.Cluster, e) }
	if b.HealthCheck == nil {
		return b.PickLive(seed, nil, age)
	}
	h.mu.Lock()
	c := h.clusters[b.Cluster]
	h.mu.Unlock()
	if c == nil {
		return ""
	}
	select {
	case <-c.warm:
	case <-ctx.Done():
		return ""
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return b.PickLive(seed, func(e string) bool {
		hh := c.hosts[e]
		return hh != nil && hh.healthy
	}, age)
}
