package dataplane

import (
	"context"
	"slices"
	"sync"
	"time"

	"isobar.dev/controller/pkg/envoysim"
)

// limits are Envoy's circuit breakers, per cluster: the requests, the
// connections (per endpoint too) and the retries at once, and the
// requests waiting for a connection. The data plane opens a connection of
// its own for each HTTP/1.1 try, so a try holds one; an HTTP/2 cluster's
// requests share theirs, and only the request limit applies to them.
type limits struct {
	mu       sync.Mutex
	clusters map[string]*load
}

// load is what a cluster has going at once.
type load struct {
	requests, conns, pending, retries int
	hostConns                         map[string]int
	// started are when its requests started, as long as a retry budget's
	// interval asks.
	started []time.Time
	// freed is closed, and replaced, when a connection is released.
	freed chan struct{}
}

func (l *limits) of(cluster string) *load {
	if l.clusters == nil {
		l.clusters = map[string]*load{}
	}
	c := l.clusters[cluster]
	if c == nil {
		c = &load{hostConns: map[string]int{}, freed: make(chan struct{})}
		l.clusters[cluster] = c
	}
	return c
}

// request takes one of the cluster's requests; false when max requests
// are going (Envoy's overflow).
func (l *limits) request(b *envoysim.Backend) (release func(), ok bool) {
	cb := b.CircuitBreakers
	l.mu.Lock()
	defer l.mu.Unlock()
	c := l.of(b.Cluster)
	if cb != nil && cb.MaxRequests > 0 && c.requests >= int(cb.MaxRequests) {
		return nil, false
	}
	c.requests++
	if cb != nil && cb.RetryBudget != nil && cb.RetryBudget.Interval > 0 {
		now := time.Now()
		c.started = append(slices.DeleteFunc(c.started, func(t time.Time) bool { return now.Sub(t) > cb.RetryBudget.Interval }), now)
	}
	return func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		c.requests--
	}, true
}

// retry takes one of the cluster's retries, and sets *release to give it
// back; false when max retries are going, and Envoy does not retry.
func (l *limits) retry(b *envoysim.Backend, release *func()) bool {
	cb := b.CircuitBreakers
	l.mu.Lock()
	defer l.mu.Unlock()
	c := l.of(b.Cluster)
	switch {
	case cb == nil:
	case cb.RetryBudget != nil:
		// The budget counts the requests started in its interval, or
		// without one those going (Envoy's active and pending requests).
		started := c.requests + c.pending
		if iv := cb.RetryBudget.Interval; iv > 0 {
			since := time.Now().Add(-iv)
			c.started = slices.DeleteFunc(c.started, func(t time.Time) bool { return t.Before(since) })
			started = len(c.started)
		}
		if !cb.RetryBudget.Allows(c.retries, started) {
			return false
		}
	case c.retries >= int(cb.MaxRetries):
		return false
	}
	c.retries++
	*release = func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		c.retries--
	}
	return true
}

// connect takes a connection to endpoint for one HTTP/1.1 try, waiting as
// a pending request while the cluster (or the endpoint) has its most;
// false when max pending requests already wait (overflow), or ctx ends.
func (l *limits) connect(ctx context.Context, b *envoysim.Backend, endpoint string) (release func(), ok bool) {
	cb := b.CircuitBreakers
	if cb == nil || b.HTTP2 {
		return func() {}, true
	}
	l.mu.Lock()
	c := l.of(b.Cluster)
	waiting := false
	for {
		full := cb.MaxConnections > 0 && c.conns >= int(cb.MaxConnections) ||
			cb.PerHostMaxConnections > 0 && c.hostConns[endpoint] >= int(cb.PerHostMaxConnections)
		if !full {
			break
		}
		if !waiting {
			if cb.MaxPendingRequests > 0 && c.pending >= int(cb.MaxPendingRequests) {
				l.mu.Unlock()
				return nil, false
			}
			c.pending++
			waiting = true
		}
		freed := c.freed
		l.mu.Unlock()
		select {
		case <-freed:
		case <-ctx.Done():
			l.mu.Lock()
			c.pending--
			l.mu.Unlock()
			return nil, false
		}
		l.mu.Lock()
	}
	if waiting {
		c.pending--
	}
	c.conns++
	c.hostConns[endpoint]++
	l.mu.Unlock()
	return func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		c.conns--
		c.hostConns[endpoint]--
		close(c.freed)
		c.freed = make(chan struct{})
	}, true
}

// overflow is Envoy's answer to a request its circuit breakers turn away.
var overflow = &envoysim.Response{Status: 503, Headers: []envoysim.Header{{Name: "x-envoy-overloaded", Value: "true"}},
	Body: "upstream connect error or disconnect/reset before headers. reset reason: overflow"}
