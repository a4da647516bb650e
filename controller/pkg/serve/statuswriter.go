package serve

import (
	"context"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"isobar.dev/controller/pkg/xdsserver"
)

// statusWriter writes the latest translated status, merged with what the
// fleet reports, to the API server. It is a leader-only runnable: replicas
// that do not lead translate and serve xDS but write nothing. Newer status
// replaces status not yet written, so a burst of translations costs one
// round of writes.
type statusWriter struct {
	opts   Options
	client client.Client
	// live reads from the API server, past the cache, after a conflict:
	// the cache may not have caught up with our own last write yet.
	live  client.Reader
	fleet func() xdsserver.FleetStatus

	mu     sync.Mutex
	latest *statusWork
	// objectsDirty says more than the Gateway may need writing: new
	// status, a status-only change to an object we write, or a failed pass.
	objectsDirty bool
	// lastWritten is the work of the last complete pass.
	lastWritten *statusWork
	kick        chan struct{}

	// gateway is the Gateway being written, during a pass.
	gateway types.NamespacedName
	written statusCache
}

func newStatusWriter(opts Options, c client.Client, live client.Reader, fleet func() xdsserver.FleetStatus) *statusWriter {
	return &statusWriter{opts: opts, client: c, live: live, fleet: fleet, kick: make(chan struct{}, 1)}
}

// set makes work the status to write.
func (w *statusWriter) set(work *statusWork) {
	w.mu.Lock()
	w.latest = work
	w.mu.Unlock()
	w.poke()
}

// poke asks for every status to be checked and written again, for example
// because someone else wrote a route's status.
func (w *statusWriter) poke() {
	w.mu.Lock()
	w.objectsDirty = true
	w.mu.Unlock()
	w.pokeGateway()
}

// pokeGateway asks for the Gateway's status to be written again: the
// fleet's acknowledgements changed Programmed, and nothing else.
func (w *statusWriter) pokeGateway() {
	select {
	case w.kick <- struct{}{}:
	default:
	}
}

// Start writes until ctx ends, retrying failed writes with backoff.
func (w *statusWriter) Start(ctx context.Context) error {
	log := ctrl.LoggerFrom(ctx).WithName("status")
	backoff := workqueue.NewTypedItemExponentialFailureRateLimiter[string](50*time.Millisecond, 30*time.Second)
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-w.kick:
		}
		w.mu.Lock()
		st := w.latest
		gatewayOnly := !w.objectsDirty && st == w.lastWritten
		w.objectsDirty = false
		w.mu.Unlock()
		if st == nil {
			continue
		}
		addresses, err := w.addresses(ctx, st.target.Gateway)
		if err == nil {
			err = w.writeStatus(ctx, st, w.fleet(), addresses, gatewayOnly)
		}
		if err == nil {
			w.lastWritten = st
			backoff.Forget("status")
			continue
		}
		delay := backoff.When("status")
		log.Error(err, "writing status; retrying", "after", delay)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(delay):
			w.poke()
		}
	}
}

// NeedLeaderElection makes the writer run on the leader only.
func (w *statusWriter) NeedLeaderElection() bool { return true }

// retry runs write until it does not conflict, with a reader that is the
// cache the first time and the API server after a conflict.
func (w *statusWriter) retry(write func(client.Reader) error) error {
	reader := client.Reader(w.client)
	return retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		err := write(reader)
		reader = w.live
		return err
	})
}
