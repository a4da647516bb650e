package engine

import (
	"iter"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"isobar.dev/controller/pkg/env"
)

// Stale returns the routes of a state whose outcome read a changed dep.
func (s *State[D]) Stale(changed map[env.Dep]bool) map[*metav1.ObjectMeta]bool {
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
func (s *State[D]) addReader(o *Outcome[D]) {
	if s.readers == nil {
		return
	}
	for d := range o.deps() {
		if s.readers[d] == nil {
			s.readers[d] = map[*metav1.ObjectMeta]bool{}
		}
		s.readers[d][o.Meta] = true
	}
}

func (s *State[D]) removeReader(o *Outcome[D]) {
	if s.readers == nil {
		return
	}
	for d := range o.deps() {
		if delete(s.readers[d], o.Meta); len(s.readers[d]) == 0 {
			delete(s.readers, d)
		}
	}
}

// deps are what attaching the route read and what its rules read.
func (o *Outcome[D]) deps() iter.Seq[env.Dep] {
	return func(yield func(env.Dep) bool) {
		for _, d := range o.Reads.Deps() {
			if !yield(d) {
				return
			}
		}
		if o.Rules == nil {
			return
		}
		for _, d := range o.Rules.Reads.Deps() {
			if !yield(d) {
				return
			}
		}
	}
}
