package serve

import (
	"context"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/retry"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"isobar.dev/controller/pkg/fleetreport"
	"isobar.dev/controller/pkg/gatewayapi"
)

// statusWriter writes the latest translated status, merged with what the
// fleet reports, to the API server. It is a leader-only runnable: replicas
// that do not lead translate and serve xDS but write nothing. Newer status
// replaces status not yet written, so a burst of translations costs one
// round of writes.
type statusWriter struct {
	opts   Options
	client client.Client
	// scheme names the kinds of the objects watch events bring.
	scheme *runtime.Scheme
	// live reads from the API server, past the cache, after a conflict:
	// the cache may not have caught up with our own last write yet.
	live  client.Reader
	fleet func() (fleetreport.Fleet, error)

	mu     sync.Mutex
	latest *statusWork
	// allDirty says every object must be checked again (a failed pass);
	// dirty names the objects whose status someone else changed.
	allDirty bool
	dirty    map[objectKey]bool
	// ownWrites are the resourceVersions our own writes gave objects, until
	// their events come back.
	ownWrites map[objectKey]string
	// lastWritten is the work of the last complete pass.
	lastWritten *statusWork
	kick        chan struct{}

	// gateway is the Gateway being written, during a pass.
	gateway types.NamespacedName
	// sets are the ListenerSets that have named the Gateway: their entries
	// in routes' status are ours.
	sets    map[types.NamespacedName]bool
	written statusCache
	// events records the problems of the Ingresses served; told are the
	// problems last told per Ingress, so that each is told once.
	events events.EventRecorder
	told   map[types.NamespacedName]string
	// ingresses are the Ingresses whose load balancer status we wrote.
	ingresses map[types.NamespacedName]bool
}

func newStatusWriter(opts Options, c client.Client, live client.Reader, fleet func() (fleetreport.Fleet, error)) *statusWriter {
	return &statusWriter{opts: opts, client: c, scheme: c.Scheme(), live: live, fleet: fleet, kick: make(chan struct{}, 1)}
}

// set makes work the status to write. Only what the translation changed
// is written: an object whose entries are the very slice written last
// time is checked again only if someone touched it, so a one-route change
// among 10,000 reads one route, not 10,000.
func (w *statusWriter) set(work *statusWork) {
	w.mu.Lock()
	w.latest = work
	w.mu.Unlock()
	w.pokeGateway()
}

// poke asks for every status to be checked and written again: a pass
// failed, and what it wrote is unknown.
func (w *statusWriter) poke() {
	w.mu.Lock()
	w.allDirty = true
	w.mu.Unlock()
	w.pokeGateway()
}

// touched asks for obj's status to be checked again: someone changed it,
// and our entries may be gone. The entries of objects nobody touched are
// not read again while the translation wants them unchanged, so that a
// pass over 10,000 routes costs the routes that changed.
func (w *statusWriter) touched(obj client.Object) {
	if _, ok := obj.(*gatewayv1.Gateway); ok {
		w.pokeGateway()
		return
	}
	key := keyOf(obj, w.scheme)
	w.mu.Lock()
	if rv, ok := w.ownWrites[key]; ok && rv == obj.GetResourceVersion() {
		// Our own write coming back: nothing to check.
		delete(w.ownWrites, key)
		w.mu.Unlock()
		return
	}
	if w.dirty == nil {
		w.dirty = map[objectKey]bool{}
	}
	w.dirty[key] = true
	w.mu.Unlock()
	w.pokeGateway()
}

// wrote remembers the resourceVersion our status write gave obj, so that
// touched can tell our write's event from someone else's.
func (w *statusWriter) wrote(obj client.Object) {
	w.mu.Lock()
	if w.ownWrites == nil {
		w.ownWrites = map[objectKey]string{}
	}
	w.ownWrites[keyOf(obj, w.scheme)] = obj.GetResourceVersion()
	w.mu.Unlock()
}

// objectKey names an object whose status the writer checks, of any kind:
// the dirty set and the writer's own writes are kept by it, and each kind's
// pass looks its objects up by it (routeKey, policyKey).
type objectKey struct {
	kind string
	types.NamespacedName
}

func routeKey(k gatewayapi.RouteKey) objectKey {
	return objectKey{k.Kind, types.NamespacedName{Namespace: k.Namespace, Name: k.Name}}
}

func policyKey(k types.NamespacedName) objectKey { return objectKey{"BackendTLSPolicy", k} }

// keyOf is obj's key, its kind from the scheme: objects from the cache
// carry no TypeMeta. An object of a kind without statuses of its own to
// check (a GatewayClass) still makes the pass more than the Gateway's.
func keyOf(obj client.Object, s *runtime.Scheme) objectKey {
	gvk, err := apiutil.GVKForObject(obj, s)
	if err != nil {
		// Not in the scheme, so not watched: no pass writes it.
		return objectKey{NamespacedName: client.ObjectKeyFromObject(obj)}
	}
	return objectKey{gvk.Kind, client.ObjectKeyFromObject(obj)}
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
		p, ok := w.next()
		if !ok {
			continue
		}
		addresses, err := w.addresses(ctx, p.work.target.Gateway)
		var fleet fleetreport.Fleet
		if err == nil {
			fleet, err = w.fleet()
		}
		if err == nil {
			err = w.writeGatewayStatus(ctx, p.work, fleet, addresses)
		}
		if err == nil && !p.gatewayOnly {
			err = w.writeObjects(ctx, p.work, p.recheck)
		}
		if err == nil {
			w.passed(p)
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

// pass is what one pass of the writer does: write work's status, the
// Gateway's alone when gatewayOnly (the same translation, written, and
// nothing touched: only the fleet's acknowledgements or the addresses can
// have changed), checking again the objects recheck names whatever their
// entries.
type pass struct {
	work        *statusWork
	gatewayOnly bool
	all         bool
	dirty       map[objectKey]bool
}

func (p pass) recheck(key objectKey) bool { return p.all || p.dirty[key] }

// next takes the next pass, clearing what it covers; false before the
// first translation.
func (w *statusWriter) next() (pass, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	p := pass{work: w.latest, all: w.allDirty, dirty: w.dirty}
	p.gatewayOnly = !p.all && len(p.dirty) == 0 && p.work == w.lastWritten
	w.allDirty, w.dirty = false, nil
	return p, p.work != nil
}

// passed records a pass that wrote everything it had to.
func (w *statusWriter) passed(p pass) {
	w.mu.Lock()
	w.lastWritten = p.work
	w.mu.Unlock()
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
