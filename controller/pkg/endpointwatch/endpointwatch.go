// Package endpointwatch watches the EndpointSlices of the Services a
// Gateway's backends are, one informer per namespace whose label selector
// names those Services. A cluster-wide informer would hold, and be woken
// by, every slice in the cluster: in a cluster of many Gateways and teams,
// each controller would pay for all of them. One watch per namespace
// rather than per Service keeps the number of watches small (a route table
// of a thousand backends usually spans a few namespaces).
package endpointwatch

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	toolscache "k8s.io/client-go/tools/cache"

	"isobar.dev/controller/pkg/informerset"
)

// byService indexes slices by the Service they belong to.
const byService = "service"

// Watcher keeps one informer per wanted namespace, and, while a
// namespace's new scope has not been listed yet, the one it replaces.
type Watcher struct {
	client  kubernetes.Interface
	handler func(*discoveryv1.EndpointSlice)
	set     *informerset.Set[scope]

	mu sync.Mutex
	// wanted is the scope of each namespace the last Want asked for;
	// replaced the listed scope it replaces, read until it is listed: a
	// new Service beside others in a namespace must not make the others'
	// endpoints go missing while the new watch lists (on a busy API
	// server, longer than a pass waits).
	wanted, replaced map[string]scope
}

// scope is what one informer watches: the slices of a namespace that
// the label selector picks. A new set of Services in a namespace is a new
// scope, listed afresh; the old one stops.
type scope struct {
	namespace string
	selector  string
}

// maxSelected is how many Services a namespace's selector names at most;
// with more, the whole namespace is watched, which keeps the watch request
// short.
const maxSelected = 100

func scopeOf(ns string, services []string) scope {
	if len(services) > maxSelected {
		return scope{namespace: ns}
	}
	req, err := labels.NewRequirement(discoveryv1.LabelServiceName, selection.In, services)
	if err != nil {
		// A name that is no label value names no slice's Service: the
		// namespace is watched whole rather than not at all.
		return scope{namespace: ns}
	}
	return scope{namespace: ns, selector: labels.NewSelector().Add(*req).String()}
}

// New returns a Watcher whose informers run until ctx ends; changed is
// called with every slice of a watched Service added, updated or deleted.
func New(ctx context.Context, c kubernetes.Interface, changed func(*discoveryv1.EndpointSlice)) *Watcher {
	w := &Watcher{client: c, handler: changed}
	w.set = informerset.New(ctx, w.informer)
	return w
}

// Want makes the watched slices those of services (Service names by
// namespace): new scopes start, ones no longer wanted stop. It waits
// up to timeout for the new ones' first listing, and reports whether it
// started any, so that the caller can read their slices before it serves
// clusters without endpoints.
func (w *Watcher) Want(services map[string][]string, timeout time.Duration) bool {
	all := w.set.All()
	w.mu.Lock()
	wanted, replaced := map[string]scope{}, map[string]scope{}
	for ns, names := range services {
		wanted[ns] = scopeOf(ns, names)
		if r, listed := w.read(ns, all); listed && r != wanted[ns] {
			replaced[ns] = r
		}
	}
	w.wanted, w.replaced = wanted, replaced
	keys := w.keys()
	w.mu.Unlock()
	started := w.set.Want(keys, timeout)

	// Replaced scopes whose successors are listed stop now; the others
	// stop at a later pass, once theirs are.
	all = w.set.All()
	w.mu.Lock()
	for ns := range w.replaced {
		if inf := all[w.wanted[ns]]; inf != nil && inf.HasSynced() {
			delete(w.replaced, ns)
		}
	}
	keys = w.keys()
	w.mu.Unlock()
	w.set.Want(keys, 0)
	return len(started) > 0
}

// keys are the scopes to run; w.mu is held.
func (w *Watcher) keys() []scope {
	keys := slices.Collect(maps.Values(w.wanted))
	return append(keys, slices.Collect(maps.Values(w.replaced))...)
}

// read returns the scope whose slices are read for namespace ns (the wanted
// one once listed, else the one it replaces) and whether it is listed;
// w.mu is held.
func (w *Watcher) read(ns string, all map[scope]toolscache.SharedIndexInformer) (scope, bool) {
	want, ok := w.wanted[ns]
	if ok {
		if inf := all[want]; inf != nil && inf.HasSynced() {
			return want, true
		}
	}
	if r, ok := w.replaced[ns]; ok {
		return r, true
	}
	if !ok {
		return scope{}, false
	}
	return want, false
}

// informerOf is the informer read for namespace ns, or nil.
func (w *Watcher) informerOf(ns string, all map[scope]toolscache.SharedIndexInformer) toolscache.SharedIndexInformer {
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, ok := w.wanted[ns]; !ok {
		return nil
	}
	s, _ := w.read(ns, all)
	return all[s]
}

// Namespaces returns the watched namespaces, sorted.
func (w *Watcher) Namespaces() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Sorted(maps.Keys(w.wanted))
}

// informer builds the informer of one scope.
func (w *Watcher) informer(sel scope) toolscache.SharedIndexInformer {
	api := w.client.DiscoveryV1().EndpointSlices(sel.namespace)
	lw := &toolscache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.LabelSelector = sel.selector
			return api.List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.LabelSelector = sel.selector
			return api.Watch(ctx, o)
		},
	}
	inf := toolscache.NewSharedIndexInformer(lw, &discoveryv1.EndpointSlice{}, 0, toolscache.Indexers{byService: func(o any) ([]string, error) {
		s, ok := o.(*discoveryv1.EndpointSlice)
		if !ok || s.Labels[discoveryv1.LabelServiceName] == "" {
			return nil, nil
		}
		return []string{s.Labels[discoveryv1.LabelServiceName]}, nil
	}})
	// Translation never reads managed fields.
	_ = inf.SetTransform(informerset.StripManagedFields)
	notify := func(o any) {
		if d, ok := o.(toolscache.DeletedFinalStateUnknown); ok {
			o = d.Obj
		}
		if s, ok := o.(*discoveryv1.EndpointSlice); ok {
			w.handler(s)
		}
	}
	_, _ = inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc: notify, DeleteFunc: notify,
		UpdateFunc: func(_, o any) { notify(o) },
	})
	return inf
}

// Slices returns every slice of the watched namespaces, namespace by
// namespace: the informers' own objects, which an unchanged slice keeps
// from one call to the next.
func (w *Watcher) Slices() []*discoveryv1.EndpointSlice {
	all := w.set.All()
	var out []*discoveryv1.EndpointSlice
	for _, ns := range w.Namespaces() {
		inf := w.informerOf(ns, all)
		if inf == nil {
			continue
		}
		for _, o := range inf.GetStore().List() {
			if s, ok := o.(*discoveryv1.EndpointSlice); ok {
				out = append(out, s)
			}
		}
	}
	return out
}

// Of returns a Service's slices, and an error when its namespace is not
// watched: the caller asked for a Service no translation used.
func (w *Watcher) Of(svc types.NamespacedName) ([]*discoveryv1.EndpointSlice, error) {
	inf := w.informerOf(svc.Namespace, w.set.All())
	if inf == nil {
		return nil, fmt.Errorf("EndpointSlices of namespace %s are not watched", svc.Namespace)
	}
	objs, err := inf.GetIndexer().ByIndex(byService, svc.Name)
	if err != nil {
		return nil, err
	}
	out := make([]*discoveryv1.EndpointSlice, 0, len(objs))
	for _, o := range objs {
		if s, ok := o.(*discoveryv1.EndpointSlice); ok {
			out = append(out, s)
		}
	}
	return out, nil
}
