// Package informerset keeps a set of informers, one per key, that follows
// what is wanted: the watches a controller opens by need (single Secrets by
// name, the EndpointSlices of one namespace) rather than one cluster-wide
// informer per kind.
package informerset

import (
	"context"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
)

// Set runs one informer per wanted key.
type Set[K comparable] struct {
	// ctx bounds every informer: they stop with it.
	ctx context.Context
	// start builds (but does not run) the informer of a key.
	start func(K) toolscache.SharedIndexInformer

	mu        sync.Mutex
	informers map[K]*running
}

type running struct {
	informer toolscache.SharedIndexInformer
	stop     context.CancelFunc
}

// New returns a Set whose informers, built by start, run until ctx ends.
func New[K comparable](ctx context.Context, start func(K) toolscache.SharedIndexInformer) *Set[K] {
	return &Set[K]{ctx: ctx, start: start, informers: map[K]*running{}}
}

// Want makes keys the watched ones: new ones start, ones no longer wanted
// stop. It waits up to timeout for the new ones' first listing, and
// returns the keys it started.
func (s *Set[K]) Want(keys []K, timeout time.Duration) []K {
	s.mu.Lock()
	wanted := make(map[K]bool, len(keys))
	var started []K
	var synced []toolscache.InformerSynced
	for _, k := range keys {
		wanted[k] = true
		if _, ok := s.informers[k]; ok {
			continue
		}
		inf := s.start(k)
		ctx, stop := context.WithCancel(s.ctx)
		s.informers[k] = &running{informer: inf, stop: stop}
		go inf.RunWithContext(ctx)
		started = append(started, k)
		synced = append(synced, inf.HasSynced)
	}
	for k, r := range s.informers {
		if !wanted[k] {
			r.stop()
			delete(s.informers, k)
		}
	}
	s.mu.Unlock()
	if len(synced) > 0 {
		ctx, cancel := context.WithTimeout(s.ctx, timeout)
		toolscache.WaitForCacheSync(ctx.Done(), synced...)
		cancel()
	}
	return started
}

// Get returns the informer of a key, if it is watched.
func (s *Set[K]) Get(k K) (toolscache.SharedIndexInformer, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.informers[k]
	if !ok {
		return nil, false
	}
	return r.informer, true
}

// All returns the watched keys and their informers.
func (s *Set[K]) All() map[K]toolscache.SharedIndexInformer {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[K]toolscache.SharedIndexInformer, len(s.informers))
	for k, r := range s.informers {
		out[k] = r.informer
	}
	return out
}

// StripManagedFields is a transform for informers whose readers never
// look at managed fields, often the largest part of an object's metadata.
func StripManagedFields(o any) (any, error) {
	if m, ok := o.(metav1.Object); ok {
		m.SetManagedFields(nil)
	}
	return o, nil
}
