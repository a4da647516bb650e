package gatewayapi

import (
	"maps"
	"slices"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"isobar.dev/controller/pkg/engine"
	"isobar.dev/controller/pkg/env"
)

// An outcome is what attaching one route object to this Gateway did (see
// engine.Outcome), with what the processor of its kind keeps beside (a
// processor's own type; nil for the Gateway API's routes).
type outcome = Outcome

// envFor returns the Env attaching a route reads through: recording in its
// outcome, or in nothing kept where o is nil (kindConflicts asks what a
// route would claim, on every translation).
func (t *gatewayTranslator) envFor(o *outcome) env.Env {
	if o == nil {
		return t.env
	}
	return t.newEnv(&o.Reads)
}

// gatewayContext is what every route's attachment depends on: the
// Gateway's spec, which of its listeners are usable, its ListenerSets and
// the route kinds the cluster serves. While it stays the same, the outcome
// of a route object stays the same unless a dep it read changes or it wins
// or loses a hostname to a route of the other kind (kindConflicts). What
// one route alone reads is recorded in its outcome instead.
type gatewayContext struct {
	// gw is the Gateway object the context was first seen with: a new
	// object with the same spec (a status write) keeps it.
	gw     *gatewayv1.Gateway
	usable string
	// sets identifies the ListenerSets naming the Gateway (object,
	// generation, allowed): their listeners are in usable's order.
	sets     string
	unserved string
}

// gatewayState is what the routes of one Gateway add up to in one
// context (the engine's state), and the kind conflicts its outcomes were
// attached with.
type gatewayState struct {
	ctx gatewayContext
	*engine.State[any]
	lost map[*metav1.ObjectMeta]map[int]string
}

// newGatewayState returns an empty state sized for the given number of
// routes.
func newGatewayState(ctx gatewayContext, listeners, routes int) *gatewayState {
	return &gatewayState{ctx: ctx, State: engine.NewState[any](listeners, routes)}
}

func (t *gatewayTranslator) context(prev *gatewayState) gatewayContext {
	var usable []byte
	for _, l := range t.listeners {
		if l.Usable() {
			usable = append(usable, '1')
		} else {
			usable = append(usable, '0')
		}
	}
	gw := t.gw
	if prev != nil && sameSpec(prev.ctx.gw, gw) {
		gw = prev.ctx.gw
	}
	return gatewayContext{gw: gw, usable: string(usable), sets: setsKey(t.sets), unserved: t.env.UnservedKinds()}
}

// sameSpec reports whether two Gateway objects translate alike: the
// listeners come from the spec alone (the generation in listener
// conditions is read from the current object on every translation).
func sameSpec(a, b *gatewayv1.Gateway) bool {
	return a == b || a.UID == b.UID && a.Namespace == b.Namespace && a.Name == b.Name &&
		apiequality.Semantic.DeepEqual(a.Spec, b.Spec)
}

// update brings the state up to date with the snapshot's routes with
// parentRefs (see withParents): it takes back what the routes no longer
// there (deleted, or replaced by a changed object), reading a changed dep
// or winning or losing a hostname to a route of the other kind added, then
// attaches the routes it has not seen and those. Takeaways come first
// because a changed route's old and new objects share a status key. The
// processors' routes are attached last, as routes of lower precedence
// (see engine.Source).
//
// TLS, TCP and UDP routes are taken back and attached again all together
// when any of them needs it: which of them holds a listener or a server
// name depends on the others (the oldest keeps it). A new object of one at
// the same generation (a status write) is no such need: it keeps its
// outcome, as an HTTPRoute does (rekey), and so does a processor's route
// whose selection says so (Rekeyed).
func (t *gatewayTranslator) update() {
	s := t.state
	s.Begin(t.slots)
	stale := s.Stale(t.cache.Changed())
	// A route that wins or loses a hostname to the other kind is stale.
	for _, lost := range []map[*metav1.ObjectMeta]map[int]string{s.lost, t.lost} {
		for m := range lost {
			if !maps.Equal(s.lost[m], t.lost[m]) {
				if stale == nil {
					stale = map[*metav1.ObjectMeta]bool{}
				}
				stale[m] = true
			}
		}
	}
	s.lost = t.lost
	newHTTP, seenHTTP := engine.Unseen(s.State, stale, t.httpRoutes, func(r *gatewayv1.HTTPRoute) *metav1.ObjectMeta { return &r.ObjectMeta })
	newGRPC, seenGRPC := engine.Unseen(s.State, stale, t.grpcRoutes, func(r *gatewayv1.GRPCRoute) *metav1.ObjectMeta { return &r.ObjectMeta })
	newStreams, seenStreams := engine.Unseen(s.State, stale, t.streams, func(r *streamRoute) *metav1.ObjectMeta { return r.meta })
	seen := seenHTTP + seenGRPC + seenStreams
	newPeers := make([][]*metav1.ObjectMeta, len(t.selections))
	for i, sel := range t.selections {
		var n int
		newPeers[i], n = engine.Unseen(s.State, stale, sel.Routes, func(m *metav1.ObjectMeta) *metav1.ObjectMeta { return m })
		seen += n
	}
	tookBackStream := false
	if seen < s.Len() {
		replaced := replacements(stale, newHTTP, newGRPC, newStreams, t.selections, newPeers)
		tookBackStream = s.Sweep(stale, replaced)
		if len(replaced) > 0 {
			newHTTP = engine.NotApplied(s.State, newHTTP, func(r *gatewayv1.HTTPRoute) *metav1.ObjectMeta { return &r.ObjectMeta })
			newGRPC = engine.NotApplied(s.State, newGRPC, func(r *gatewayv1.GRPCRoute) *metav1.ObjectMeta { return &r.ObjectMeta })
			newStreams = engine.NotApplied(s.State, newStreams, func(r *streamRoute) *metav1.ObjectMeta { return r.meta })
			for i, sel := range t.selections {
				if sel.Rekeyed {
					newPeers[i] = engine.NotApplied(s.State, newPeers[i], func(m *metav1.ObjectMeta) *metav1.ObjectMeta { return m })
				}
			}
		}
	}
	// A stream route whose object was only replaced keeps its outcome, and
	// so does every other: what each holds depends on the others alone.
	streamsChanged := tookBackStream || len(newStreams) > 0
	if streamsChanged {
		s.TakeBackStreams()
	}
	// Oldest first, so that the routes' entries reach their virtual
	// hosts in route order.
	fresh := make([]newRoute, 0, len(newHTTP)+len(newGRPC))
	for _, r := range newHTTP {
		fresh = append(fresh, newRoute{age: engine.AgeOf(&r.ObjectMeta), http: r})
	}
	for _, r := range newGRPC {
		fresh = append(fresh, newRoute{age: engine.AgeOf(&r.ObjectMeta), grpc: r})
	}
	slices.SortFunc(fresh, func(a, b newRoute) int { return engine.CompareAges(a.age, b.age) })
	for i, r := range fresh {
		if r.http != nil {
			t.attachHTTPRoute(r.http, int32(i))
		} else {
			t.attachGRPCRoute(r.grpc, int32(i))
		}
	}
	// Then the routing APIs of lower precedence (see engine.Source), in
	// the processors' order, each's oldest first.
	rank := int32(len(fresh))
	for i, p := range t.procs {
		slices.SortFunc(newPeers[i], engine.CompareRoutes)
		for _, m := range newPeers[i] {
			t.attachPeer(p, &t.selections[i], m, rank)
			rank++
		}
	}
	if streamsChanged {
		for _, r := range t.streams {
			t.attachStreamRoute(r)
		}
	}
}

// withParents returns the routes that attach somewhere (parentRefs, or
// default Gateways), routes itself when all do. A route that does not
// attaches nowhere and has no status entry of ours, so it needs no outcome; and a per-Gateway controller caches the
// routes of other Gateways as stubs without parentRefs, most of its
// routes in a cluster of many Gateways, which would each hold an outcome
// and size the state's maps.
func withParents[T any](routes []*T, attaches func(*T) bool) []*T {
	for i, r := range routes {
		if attaches(r) {
			continue
		}
		out := slices.Clone(routes[:i])
		for _, r := range routes[i+1:] {
			if attaches(r) {
				out = append(out, r)
			}
		}
		return out
	}
	return routes
}

// newRoute is a route to attach, with its age copied out of its metadata:
// sorting thousands compares these without chasing pointers.
type newRoute struct {
	age  engine.Age
	http *gatewayv1.HTTPRoute
	grpc *gatewayv1.GRPCRoute
}

// replacements are the new objects of routes that may be replacing an
// object of the same route in the state, by route: those whose deps did
// not change.
func replacements(stale map[*metav1.ObjectMeta]bool, http []*gatewayv1.HTTPRoute, grpc []*gatewayv1.GRPCRoute, streams []*streamRoute, sels []Selection, peers [][]*metav1.ObjectMeta) map[engine.RouteKey]*metav1.ObjectMeta {
	n := len(http) + len(grpc) + len(streams)
	for i, sel := range sels {
		if sel.Rekeyed {
			n += len(peers[i])
		}
	}
	if n == 0 {
		return nil
	}
	out := make(map[engine.RouteKey]*metav1.ObjectMeta, n)
	add := func(kind gatewayv1.Kind, m *metav1.ObjectMeta) {
		if !stale[m] {
			out[engine.KeyOf(string(kind), m)] = m
		}
	}
	for _, r := range http {
		add("HTTPRoute", &r.ObjectMeta)
	}
	for _, r := range grpc {
		add("GRPCRoute", &r.ObjectMeta)
	}
	for _, r := range streams {
		add(r.kind, r.meta)
	}
	for i, sel := range sels {
		if sel.Rekeyed {
			for _, m := range peers[i] {
				add(sel.Kind, m)
			}
		}
	}
	return out
}

// record starts the outcome of attaching a route, whose place among the
// routes attached with it is rank; it returns nil when the route's object
// is already in the state (a snapshot that lists it twice).
func (t *gatewayTranslator) record(kind gatewayv1.Kind, meta *metav1.ObjectMeta, rank int32) *outcome {
	stream := kind == "TLSRoute" || kind == "TCPRoute" || kind == "UDPRoute"
	return t.state.Record(string(kind), engine.FromGatewayAPI, stream, meta, rank)
}
