// Package drain is the Envoy pod's shutdown hook (`isobar-controller
// drain`, a sidecar): when Kubernetes stops the pod, its preStop hook asks
// this server to drain Envoy, and the hook returns once Envoy's connections
// have finished or the timeout has passed; only then does Envoy get
// SIGTERM. Envoy's admin interface listens on loopback only, so the hook
// cannot call it directly.
package drain

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Options configure a drain.
type Options struct {
	// Admin is Envoy's admin address, host:port.
	Admin string
	// Gradual drains listeners gracefully (Envoy closes connections over
	// its --drain-time-s); otherwise they are drained at once.
	Gradual bool
	// MinDuration is waited even when no connection is open, so that load
	// balancers notice the failing health check first.
	MinDuration time.Duration
	// Timeout bounds the whole drain.
	Timeout time.Duration
	// Poll is how often open connections are counted.
	Poll time.Duration
}

// Handler serves /shutdown: the first call starts the drain, every call
// returns when it is over.
type Handler struct {
	opts   Options
	client *http.Client
	once   sync.Once
	done   chan struct{}
	result error
}

// NewHandler returns a handler that drains the Envoy at opts.Admin.
func NewHandler(opts Options) *Handler {
	if opts.Poll == 0 {
		opts.Poll = time.Second
	}
	return &Handler{opts: opts, client: &http.Client{Timeout: 5 * time.Second}, done: make(chan struct{})}
}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/shutdown" {
		http.NotFound(w, r)
		return
	}
	h.once.Do(func() {
		go func() {
			h.result = h.drain(context.Background())
			close(h.done)
		}()
	})
	select {
	case <-h.done:
	case <-r.Context().Done():
		return
	}
	if h.result != nil {
		http.Error(w, h.result.Error(), http.StatusInternalServerError)
		return
	}
	fmt.Fprintln(w, "drained")
}

// drain fails Envoy's health check, drains its listeners, then waits until
// no downstream connection is open (after at least MinDuration) or the
// timeout passes.
func (h *Handler) drain(ctx context.Context) error {
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, h.opts.Timeout)
	defer cancel()
	if err := h.post(ctx, "/healthcheck/fail"); err != nil {
		return err
	}
	path := "/drain_listeners"
	if h.opts.Gradual {
		path += "?graceful"
	}
	if err := h.post(ctx, path); err != nil {
		return err
	}
	tick := time.NewTicker(h.opts.Poll)
	defer tick.Stop()
	for {
		open, err := h.openConnections(ctx)
		if err == nil && open == 0 && time.Since(start) >= h.opts.MinDuration {
			return nil
		}
		select {
		case <-ctx.Done():
			// Out of time: Envoy stops with what is still open.
			return nil
		case <-tick.C:
		}
	}
}

func (h *Handler) post(ctx context.Context, path string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+h.opts.Admin+path, nil)
	if err != nil {
		return err
	}
	resp, err := h.client.Do(req)
	if err != nil {
		return fmt.Errorf("envoy admin %s: %w", path, err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("envoy admin %s: %s", path, resp.Status)
	}
	return nil
}

// openConnections sums the downstream_cx_active gauges of Envoy's
// listeners (the admin and stats listeners' own are not counted).
func (h *Handler) openConnections(ctx context.Context) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+h.opts.Admin+"/stats?filter=^listener\\..*\\.downstream_cx_active$", nil)
	if err != nil {
		return 0, err
	}
	resp, err := h.client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	total := 0
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		name, value, ok := strings.Cut(sc.Text(), ": ")
		if !ok || strings.HasPrefix(name, "listener.admin.") {
			continue
		}
		n, err := strconv.Atoi(strings.TrimSpace(value))
		if err != nil {
			continue
		}
		total += n
	}
	return total, sc.Err()
}
