package gatewayapi

import (
	"iter"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"isobar.dev/controller/pkg/env"
)

// stale returns the routes of a state whose outcome read a changed dep.
func (s *gatewayState) stale(changed map[env.Dep]bool) map[*metav1.ObjectMeta]bool {
	if len(changed) == 0 {
		return nil
	}
	if s.readers == nil {
		s.readers = map[env.Dep]map[*metav1.ObjectMeta]bool{}
		for _, o := range s.applied {
			s.addReader(o)
		}
	}
	var out map[*metav1.ObjectMeta]bool
	for d := range changed {
		for m := range s.readers[d] {
			if out == nil {
				out = map[*metav1.ObjectMeta]bool{}
			}
			out[m] = true
		}
	}
	return out
}

// addReader indexes an outcome's deps, once the state keeps an index.
func (s *gatewayState) addReader(o *outcome) {
	if s.readers == nil {
		return
	}
	for d := range o.allDeps() {
		if s.readers[d] == nil {
			s.readers[d] = map[*metav1.ObjectMeta]bool{}
		}
		s.readers[d][o.meta] = true
	}
}

func (s *gatewayState) removeReader(o *outcome) {
	if s.readers == nil {
		return
	}
	for d := range o.allDeps() {
		if delete(s.readers[d], o.meta); len(s.readers[d]) == 0 {
			delete(s.readers, d)
		}
	}
}

// allDeps are what attaching the route read and what its rules read.
func (o *outcome) allDeps() iter.Seq[env.Dep] {
	return func(yield func(env.Dep) bool) {
		for _, d := range o.reads.Deps() {
			if !yield(d) {
				return
			}
		}
		if o.rules == nil {
			return
		}
		for _, d := range o.rules.reads.Deps() {
			if !yield(d) {
				return
			}
		}
	}
}
