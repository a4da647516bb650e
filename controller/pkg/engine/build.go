package engine

import (
	"cmp"
	"slices"
	"sync/atomic"

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

// serials number the IR that states build, in the whole process, so that
// a second stage never takes changes to an IR for changes to another
// state's.
var serials atomic.Uint64

// Build sets g's listeners, those of the tables ordered by port, its
// serial, and what changed since the state's previous build (none the
// first time). The state keeps tables its routes have left, and those of
// stream routes that are gone: those have none.
func (s *State[D]) Build(g *ir.Gateway) {
	// The first build has nothing to change: it records nothing.
	var ch *ir.Changes
	if s.serial != 0 {
		ch = &ir.Changes{Base: s.serial, Listeners: map[string]bool{}, RouteTables: map[string]map[string]bool{}, Chains: map[string]bool{}}
	}
	g.Listeners = nil
	for _, tb := range s.tables {
		if len(tb.hosts) > 0 || len(tb.streams) > 0 {
			g.Listeners = append(g.Listeners, tb.listener(ch))
		}
	}
	slices.SortFunc(g.Listeners, func(a, b *ir.Listener) int { return cmp.Compare(a.Port, b.Port) })
	s.serial = serials.Add(1)
	g.Serial, g.Changes = s.serial, ch
}
