package engine

import (
	"iter"
	"maps"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"isobar.dev/controller/pkg/backend"
	"isobar.dev/controller/pkg/env"
	"isobar.dev/controller/pkg/ir"
)

// An Outcome is everything attaching one route object to one Gateway did:
// its parent statuses, the listeners it counted on, the routes it added
// to virtual hosts and the clusters it uses. A Gateway's state is the sum
// of its routes' outcomes. TLS, TCP and UDP routes have outcomes too;
// what they claim of a listener is kept in its table (ClaimStream).
// Detail is what a processor keeps beside (an HTTPProxy tree's statuses,
// say).
type Outcome[D any] struct {
	Statuses []gatewayv1.RouteParentStatus
	// Counted are the indexes of listeners whose attachedRoutes it adds to.
	Counted  []int
	Added    []Addition
	Clusters []backend.ClusterSpec
	Kind     string
	Source   Source
	Meta     *metav1.ObjectMeta
	// Stream says the route is a TLS, TCP or UDP route's, whose claims
	// depend on every other stream route's.
	Stream bool
	// Reads are what attaching the route read (namespace labels), and
	// for a TLS, TCP or UDP route what resolving its backends read.
	Reads env.Reads
	// Rules are the route's translated rules, reused when the Gateway's
	// context changes but none of the rules' deps does.
	Rules  *Rules
	Detail D
	// epoch is the last translation whose snapshot held the route.
	epoch uint64
	// Rank is the route's place among the routes attached with it.
	Rank int32
}

// An Addition is the routes an outcome added to the virtual hosts of its
// hostnames on one listener.
type Addition struct {
	Listener int
	Hosts    []string
	Routes   [][]*ir.Route
	// Policy, when set, is the hosts' own: the outcome owns them.
	Policy *ir.VirtualHostPolicy
}

// Rules are a route's translated rules, of whatever type its processor
// translates rules into (see CachedRules), and what translating them read:
// while none of that changes, the rules stay as they are.
type Rules struct {
	Value any
	Reads env.Reads
}

// A State is what the routes of one Gateway add up to in one context (the
// processors decide what a context is): kept between translations and
// brought up to date by the routes that came, went or changed.
type State[D any] struct {
	epoch uint64
	// serial is the IR's the state built last, 0 before the first.
	serial uint64
	// applied holds the outcome of every route object in the state, by
	// its metadata.
	applied   map[*metav1.ObjectMeta]*Outcome[D]
	listeners []Listener
	attached  []int32 // per listener
	tables    map[TableKey]*Table
	clusters  map[backend.ClusterSpec]int // by the number of outcomes using them
	routes    map[RouteKey][]gatewayv1.RouteParentStatus
	// readers are the routes whose outcome read each dep: built when a
	// dep first changes (a full translation does not pay for it), then
	// kept.
	readers map[env.Dep]map[*metav1.ObjectMeta]bool
}

// NewState returns an empty state sized for the given number of
// listeners and routes.
func NewState[D any](listeners, routes int) *State[D] {
	return &State[D]{
		applied:  make(map[*metav1.ObjectMeta]*Outcome[D], routes),
		attached: make([]int32, listeners),
		tables:   map[TableKey]*Table{},
		clusters: map[backend.ClusterSpec]int{},
		routes:   make(map[RouteKey][]gatewayv1.RouteParentStatus, routes),
	}
}

// Begin starts a translation whose listeners, in the order outcomes count
// them by, are these: the same as the state's context's.
func (s *State[D]) Begin(listeners []Listener) {
	s.epoch++
	s.listeners = listeners
}

// Len is the number of route objects in the state.
func (s *State[D]) Len() int { return len(s.applied) }

// Applied returns the outcome of a route object, nil when the state does
// not hold it.
func (s *State[D]) Applied(meta *metav1.ObjectMeta) *Outcome[D] { return s.applied[meta] }

// Outcomes are the state's outcomes, by route object.
func (s *State[D]) Outcomes() iter.Seq2[*metav1.ObjectMeta, *Outcome[D]] {
	return maps.All(s.applied)
}

// Attached is the number of routes counted on each listener.
func (s *State[D]) Attached() []int32 { return s.attached }

// Routes are the route parent statuses of the state's outcomes.
func (s *State[D]) Routes() map[RouteKey][]gatewayv1.RouteParentStatus { return s.routes }

// Clusters are the cluster specs the state's outcomes use.
func (s *State[D]) Clusters() iter.Seq[backend.ClusterSpec] {
	return func(yield func(backend.ClusterSpec) bool) {
		for c := range s.clusters {
			if !yield(c) {
				return
			}
		}
	}
}

// Record starts the outcome of attaching a route object, whose place
// among the routes attached with it is rank; it returns nil when the
// object is already in the state (a snapshot that lists it twice). The
// routes of one translation are ranked in precedence order (by Source,
// then oldest first), which lets their entries settle on a host without
// comparing routes.
func (s *State[D]) Record(kind string, src Source, stream bool, meta *metav1.ObjectMeta, rank int32) *Outcome[D] {
	if _, done := s.applied[meta]; done {
		return nil
	}
	return &Outcome[D]{Kind: kind, Source: src, Stream: stream, Meta: meta, epoch: s.epoch, Rank: rank}
}

// Apply adds a recorded outcome to the state.
func (s *State[D]) Apply(o *Outcome[D]) {
	s.applied[o.Meta] = o
	for _, i := range o.Counted {
		s.attached[i]++
	}
	for _, c := range o.Clusters {
		s.clusters[c]++
	}
	s.addReader(o)

	for _, a := range o.Added {
		l := s.listeners[a.Listener]
		s.Table(l).addRoutes(a.Hosts, l.Certificates, o.Meta, o.Source, o.Rank, s.epoch, a.Routes, a.Policy)
	}
	if len(o.Statuses) > 0 {
		// Clipped, so that a later append copies instead of writing into
		// the outcome.
		s.routes[KeyOf(o.Kind, o.Meta)] = o.Statuses[:len(o.Statuses):len(o.Statuses)]
	}
}

// takeBack subtracts an outcome from the state and forgets it. A TLS, TCP
// or UDP route's claims on its listeners go with all the others' (see
// TakeBackStreams).
func (s *State[D]) takeBack(o *Outcome[D]) {
	for _, i := range o.Counted {
		s.attached[i]--
	}
	for _, c := range o.Clusters {
		if s.clusters[c]--; s.clusters[c] <= 0 {
			delete(s.clusters, c)
		}
	}
	s.removeReader(o)

	for _, a := range o.Added {
		s.Table(s.listeners[a.Listener]).removeRoutes(a.Hosts, o.Meta, o.Source, a.Routes)
	}
	if len(o.Statuses) > 0 {
		delete(s.routes, KeyOf(o.Kind, o.Meta))
	}
	delete(s.applied, o.Meta)
}

// TakeBackStreams takes back every TLS, TCP and UDP route's outcome and
// their claims, to attach them again all together: which of them holds a
// listener or a server name depends on the others (the oldest keeps it).
func (s *State[D]) TakeBackStreams() {
	for _, o := range s.applied {
		if o.Stream {
			s.takeBack(o)
		}
	}
	for _, tb := range s.tables {
		clear(tb.streams)
	}
}

// Sweep takes back the outcomes of the route objects this translation
// did not mark (Unseen) and of the stale, except those that replaced
// holds a new object of at the same generation, which keep their outcome
// (rekey). It reports whether it took back a TLS, TCP or UDP route's.
func (s *State[D]) Sweep(stale map[*metav1.ObjectMeta]bool, replaced map[RouteKey]*metav1.ObjectMeta) (tookBackStream bool) {
	for m, o := range s.applied {
		if o.epoch == s.epoch {
			continue
		}
		if n := replaced[KeyOf(o.Kind, m)]; n != nil && !stale[m] && sameGeneration(m, n) {
			s.rekey(o, n)
			continue
		}
		tookBackStream = tookBackStream || o.Stream
		s.takeBack(o)
	}
	return tookBackStream
}

// sameGeneration reports whether two objects are the same object at the
// same generation: one replaced the other without a change to its spec
// (a status write, ours after every change, or another controller's).
// Attaching routes reads nothing else of a route's metadata but its
// identity and age, and the API server moves the generation on when it
// sets the deletion timestamp.
func sameGeneration(old, now *metav1.ObjectMeta) bool {
	return old.UID != "" && old.UID == now.UID && old.Generation == now.Generation
}

// rekey moves an outcome to a new object of its route at the same
// generation, which would attach exactly as it did: attaching it again
// costs as much as a new route, and after the status writes that follow a
// start, the first change would attach every route again. Nothing may
// keep the old object: the state's readers and the virtual hosts' entries
// move to the new one.
func (s *State[D]) rekey(o *Outcome[D], meta *metav1.ObjectMeta) {
	s.removeReader(o)
	for _, a := range o.Added {
		tb := s.Table(s.listeners[a.Listener])
		for _, h := range a.Hosts {
			tb.hosts[h].rekey(o.Meta, meta, a.Routes)
		}
	}
	delete(s.applied, o.Meta)
	o.Meta, o.epoch = meta, s.epoch
	s.applied[meta] = o
	s.addReader(o)
}

// Unseen marks the routes the state holds as seen in this translation, and
// returns the others and how many it marked. A stale route is not marked:
// its outcome is taken back and it is attached again.
func Unseen[T, D any](s *State[D], stale map[*metav1.ObjectMeta]bool, routes []*T, meta func(*T) *metav1.ObjectMeta) ([]*T, int) {
	var out []*T
	seen := 0
	for _, r := range routes {
		if o, ok := s.applied[meta(r)]; !ok || stale[meta(r)] {
			out = append(out, r)
		} else if o.epoch != s.epoch {
			o.epoch = s.epoch
			seen++
		}
	}
	return out, seen
}

// NotApplied returns the routes whose objects the state does not hold.
func NotApplied[T, D any](s *State[D], routes []*T, meta func(*T) *metav1.ObjectMeta) []*T {
	out := routes[:0:0]
	for _, r := range routes {
		if _, ok := s.applied[meta(r)]; !ok {
			out = append(out, r)
		}
	}
	return out
}

// Shadowed calls yield for each route of o that another route of the same
// match on the same host takes precedence over (see Source), with that
// route's object.
func (s *State[D]) Shadowed(o *Outcome[D], yield func(host string, r *ir.Route, by *metav1.ObjectMeta)) {
	for _, a := range o.Added {
		tb := s.Table(s.listeners[a.Listener])
		for _, h := range a.Hosts {
			for _, rs := range a.Routes {
				for _, r := range rs {
					if w, ok := tb.hosts[h].winner(r); ok && w.meta != o.Meta {
						yield(h, r, w.meta)
					}
				}
			}
		}
	}
}
