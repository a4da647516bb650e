package engine

import (
	"cmp"
	"slices"

	"isobar.dev/controller/pkg/ir"
)

// Prepare starts building the IR: it drops the virtual hosts left without
// routes and clears what the processors set on every build (a table's
// Validation, Listeners, Fallback and Names), which they set again
// through Tables before Build.
func (s *State[D]) Prepare() {
	for _, tb := range s.tables {
		tb.prune()
		tb.Validation, tb.Fallback, tb.Names = nil, "", nil
		tb.Listeners = tb.Listeners[:0]
	}
}

// Tables are the state's tables, by port.
func (s *State[D]) Tables() map[TableKey]*Table { return s.tables }

// Build returns the IR listeners of the tables, ordered by port. The
// state keeps tables its routes have left, and those of stream routes
// that are gone: those have none.
func (s *State[D]) Build() []*ir.Listener {
	var out []*ir.Listener
	for _, tb := range s.tables {
		if len(tb.hosts) > 0 || len(tb.streams) > 0 {
			out = append(out, tb.listener())
		}
	}
	slices.SortFunc(out, func(a, b *ir.Listener) int { return cmp.Compare(a.Port, b.Port) })
	return out
}
