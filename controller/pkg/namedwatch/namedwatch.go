// Package namedwatch watches single Secrets and ConfigMaps by name. Each
// object gets its own list and watch with the field selector
// metadata.name, which is what an RBAC rule with resourceNames allows: the
// controller holds read access to exactly the objects certrefs names, and
// a namespace-wide or cluster-wide watch would be refused.
package namedwatch

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	toolscache "k8s.io/client-go/tools/cache"

	"isobar.dev/api/certrefs"
	"isobar.dev/controller/pkg/informerset"
)

// Watcher keeps one informer per wanted object.
type Watcher struct {
	client  kubernetes.Interface
	changed func()
	set     *informerset.Set[certrefs.Ref]

	mu sync.Mutex
	// errs are the watches' last list or watch errors, such as a missing
	// RBAC grant, until they sync.
	errs map[certrefs.Ref]error
}

// New returns a Watcher whose informers run until ctx ends; changed is
// called on every add, update and delete of a watched object.
func New(ctx context.Context, c kubernetes.Interface, changed func()) *Watcher {
	w := &Watcher{client: c, changed: changed, errs: map[certrefs.Ref]error{}}
	w.set = informerset.New(ctx, w.informer)
	return w
}

// Want makes refs the watched objects: new ones start, ones no longer
// wanted stop. It waits up to timeout for the new ones' first listing, so
// that a pass right after a reference appears sees the object; it returns
// the wanted objects not yet listed and why, such as a refused watch (their
// informers keep retrying, and report the object when they get it).
func (w *Watcher) Want(refs []certrefs.Ref, timeout time.Duration) map[certrefs.Ref]error {
	w.set.Want(refs, timeout)
	w.mu.Lock()
	defer w.mu.Unlock()
	var unsynced map[certrefs.Ref]error
	all := w.set.All()
	for r := range w.errs {
		if _, ok := all[r]; !ok {
			delete(w.errs, r)
		}
	}
	for r, inf := range all {
		if !inf.HasSynced() {
			if unsynced == nil {
				unsynced = map[certrefs.Ref]error{}
			}
			err := w.errs[r]
			if err == nil {
				err = fmt.Errorf("not listed yet")
			}
			unsynced[r] = err
		}
	}
	return unsynced
}

// informer builds the informer of one object.
func (w *Watcher) informer(r certrefs.Ref) toolscache.SharedIndexInformer {
	var obj runtime.Object
	var lw *toolscache.ListWatch
	if r.Kind == certrefs.ConfigMap {
		obj = &corev1.ConfigMap{}
		cms := w.client.CoreV1().ConfigMaps(r.Namespace)
		lw = byName(r.Name, func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) { return cms.List(ctx, o) }, cms.Watch)
	} else {
		obj = &corev1.Secret{}
		secrets := w.client.CoreV1().Secrets(r.Namespace)
		lw = byName(r.Name, func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) { return secrets.List(ctx, o) }, secrets.Watch)
	}
	inf := toolscache.NewSharedIndexInformer(lw, obj, 0, toolscache.Indexers{})
	// Translation never reads managed fields.
	_ = inf.SetTransform(informerset.StripManagedFields)
	_ = inf.SetWatchErrorHandlerWithContext(func(_ context.Context, _ *toolscache.Reflector, err error) {
		w.mu.Lock()
		w.errs[r] = err
		w.mu.Unlock()
	})
	notify := func(any) { w.changed() }
	_, _ = inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc: notify, DeleteFunc: notify,
		UpdateFunc: func(_, _ any) { w.changed() },
	})
	return inf
}

// byName lists and watches the one object named name.
func byName(name string, list func(context.Context, metav1.ListOptions) (runtime.Object, error), watchFn func(context.Context, metav1.ListOptions) (watch.Interface, error)) *toolscache.ListWatch {
	selector := fields.OneTermEqualSelector("metadata.name", name).String()
	return &toolscache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.FieldSelector = selector
			return list(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector = selector
			return watchFn(ctx, o)
		},
	}
}

// Secrets returns the watched Secrets that exist: the informers' own
// objects, which an unchanged Secret keeps from one call to the next.
func (w *Watcher) Secrets() []*corev1.Secret { return objects[corev1.Secret](w, certrefs.Secret) }

// ConfigMaps returns the watched ConfigMaps that exist.
func (w *Watcher) ConfigMaps() []*corev1.ConfigMap {
	return objects[corev1.ConfigMap](w, certrefs.ConfigMap)
}

// objects lists the watched objects of a kind in the order of their
// references, so that a translation's input does not depend on map order.
func objects[T any](w *Watcher, kind string) []*T {
	all := w.set.All()
	refs := make([]certrefs.Ref, 0, len(all))
	for r := range all {
		if r.Kind == kind {
			refs = append(refs, r)
		}
	}
	slices.SortFunc(refs, func(a, b certrefs.Ref) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	var out []*T
	for _, r := range refs {
		for _, o := range all[r].GetStore().List() {
			if t, ok := o.(*T); ok {
				out = append(out, t)
			}
		}
	}
	return out
}
