// Package endpointwatch watches the EndpointSlices of the namespaces a
// Gateway's backends live in, one informer per namespace. A cluster-wide
// informer would hold, and be woken by, every slice in the cluster: in a
// cluster of many Gateways and teams, each controller would pay for all of
// them. Namespaces rather than Services keep the number of watches small
// (a route table of a thousand backends usually spans a few namespaces).
package endpointwatch

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	toolscache "k8s.io/client-go/tools/cache"

	"isobar.dev/controller/pkg/informerset"
)

// byService indexes slices by the Service they belong to.
const byService = "service"

// Watcher keeps one informer per wanted namespace.
type Watcher struct {
	client  kubernetes.Interface
	handler func(*discoveryv1.EndpointSlice)
	set     *informerset.Set[string]
}

// New returns a Watcher whose informers run until ctx ends; changed is
// called with every slice added, updated or deleted in a watched namespace.
func New(ctx context.Context, c kubernetes.Interface, changed func(*discoveryv1.EndpointSlice)) *Watcher {
	w := &Watcher{client: c, handler: changed}
	w.set = informerset.New(ctx, w.informer)
	return w
}

// Want makes namespaces the watched ones: new ones start, ones no longer
// wanted stop. It waits up to timeout for the new ones' first listing, and
// reports whether it started any, so that the caller can read their slices
// before it serves clusters without endpoints.
func (w *Watcher) Want(namespaces []string, timeout time.Duration) bool {
	return len(w.set.Want(namespaces, timeout)) > 0
}

// Namespaces returns the watched namespaces, sorted.
func (w *Watcher) Namespaces() []string {
	return slices.Sorted(maps.Keys(w.set.All()))
}

// informer builds the informer of one namespace.
func (w *Watcher) informer(ns string) toolscache.SharedIndexInformer {
	api := w.client.DiscoveryV1().EndpointSlices(ns)
	lw := &toolscache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) { return api.List(ctx, o) },
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
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
	for _, ns := range slices.Sorted(maps.Keys(all)) {
		for _, o := range all[ns].GetStore().List() {
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
	inf, ok := w.set.Get(svc.Namespace)
	if !ok {
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
