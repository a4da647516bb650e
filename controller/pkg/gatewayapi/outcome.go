package gatewayapi

import (
	"cmp"
	"maps"
	"slices"
	"strings"

	contourv1 "github.com/projectcontour/contour/apis/projectcontour/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"isobar.dev/controller/pkg/env"
	"isobar.dev/controller/pkg/httpproxy"
	"isobar.dev/controller/pkg/ir"
	"isobar.dev/controller/pkg/routerule"
)

// An outcome is everything attaching one route to one Gateway did: its
// parent statuses, the listeners it counted on, the routes it added to
// virtual hosts (HTTPRoute, GRPCRoute) and the clusters it uses. A Gateway's
// state is the sum of its routes' outcomes, so that a route that changes is
// a subtraction and an addition instead of a translation of every route.
// TLS, TCP and UDP routes have outcomes too; what they claim of a listener
// is kept in its table (see update).
type outcome struct {
	statuses []gatewayv1.RouteParentStatus
	counted  []int // indexes of listeners whose attachedRoutes it adds to
	added    []addition
	clusters []routerule.ClusterSpec
	kind     string
	source   source
	meta     *metav1.ObjectMeta
	// reads are what attaching the route read (namespace labels), and
	// for a TLS, TCP or UDP route what resolving its backends read.
	reads env.Reads
	// rules are the route's translated rules, reused when the Gateway's
	// context changes but none of the rules' deps does.
	rules *cachedRules
	// shared is the cluster a UDPRoute's weighted backends make.
	shared *sharedCluster
	// problems are an Ingress's, for its Events, or what attaching a root
	// HTTPProxy found; proxyStatuses are the statuses of the proxies of a
	// root HTTPProxy's tree.
	problems      []string
	proxyStatuses []httpproxy.ProxyStatus
	// chainTLS is what a root HTTPProxy's TLS virtual host asks of its
	// filter chain.
	chainTLS *ir.ChainTLS
	// epoch is the last translation whose snapshot held the route.
	epoch uint64
	// rank is the route's place among the routes attached with it.
	rank int32
}

type addition struct {
	listener int
	hosts    []string
	routes   [][]*ir.Route
}

// envFor returns the Env attaching a route reads through: recording in its
// outcome, or in nothing kept where o is nil (kindConflicts asks what a
// route would claim, on every translation).
func (t *gatewayTranslator) envFor(o *outcome) env.Env {
	if o == nil {
		return t.env
	}
	return t.newEnv(&o.reads)
}

// isStream says the outcome is a TLS, TCP or UDP route's.
func (o *outcome) isStream() bool {
	return o.kind == "TLSRoute" || o.kind == "TCPRoute" || o.kind == "UDPRoute"
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
// context: kept between translations and brought up to date by the routes
// that came, went or changed.
type gatewayState struct {
	ctx   gatewayContext
	epoch uint64
	// applied holds the outcome of every route object in the state, by
	// its metadata (the same for both kinds).
	applied  map[*metav1.ObjectMeta]*outcome
	attached []int32 // per listener
	tables   map[tableKey]*table
	clusters map[routerule.ClusterSpec]int // by the number of outcomes using them
	routes   map[RouteKey][]gatewayv1.RouteParentStatus
	// readers are the routes whose outcome read each dep: built when a
	// dep first changes (a full translation does not pay for it), then
	// kept.
	readers map[env.Dep]map[*metav1.ObjectMeta]bool
	// lost are the kind conflicts the outcomes were attached with.
	lost map[*metav1.ObjectMeta]map[int]string
	// shared are the UDPRoutes' clusters of weighted backends, by name.
	shared map[string]*sharedCluster
}

// newGatewayState returns an empty state sized for the given number of
// routes.
func newGatewayState(ctx gatewayContext, listeners, routes int) *gatewayState {
	return &gatewayState{
		ctx:      ctx,
		applied:  make(map[*metav1.ObjectMeta]*outcome, routes),
		attached: make([]int32, listeners),
		tables:   map[tableKey]*table{},
		clusters: map[routerule.ClusterSpec]int{},
		routes:   make(map[RouteKey][]gatewayv1.RouteParentStatus, routes),
		shared:   map[string]*sharedCluster{},
	}
}

func (t *gatewayTranslator) context(prev *gatewayState) gatewayContext {
	var usable []byte
	for _, l := range t.listeners {
		if l.usable() {
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
// Ingresses the Gateway serves are attached last, as routes of lower
// precedence (see source).
//
// TLS, TCP and UDP routes are taken back and attached again all together
// when any of them needs it: which of them holds a listener or a server
// name depends on the others (the oldest keeps it). A new object of one at
// the same generation (a status write) is no such need: it keeps its
// outcome, as an HTTPRoute does (rekey), and so does a root HTTPProxy,
// whose tree is its spec's and what it read. An Ingress is never rekeyed:
// its routes change with its annotations, at the same generation.
func (t *gatewayTranslator) update() {
	s := t.state
	s.epoch++
	stale := s.stale(t.cache.changed)
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
	newHTTP, seenHTTP := unseen(s, stale, t.httpRoutes, func(r *gatewayv1.HTTPRoute) *metav1.ObjectMeta { return &r.ObjectMeta })
	newGRPC, seenGRPC := unseen(s, stale, t.grpcRoutes, func(r *gatewayv1.GRPCRoute) *metav1.ObjectMeta { return &r.ObjectMeta })
	newStreams, seenStreams := unseen(s, stale, t.streams, func(r *streamRoute) *metav1.ObjectMeta { return r.meta })
	newIngresses, seenIngresses := unseen(s, stale, t.ingresses, func(i *networkingv1.Ingress) *metav1.ObjectMeta { return &i.ObjectMeta })
	newRoots, seenRoots := unseen(s, stale, t.roots, func(p *contourv1.HTTPProxy) *metav1.ObjectMeta { return &p.ObjectMeta })
	tookBackStream := false
	if seenHTTP+seenGRPC+seenStreams+seenIngresses+seenRoots < len(s.applied) {
		replaced := replacements(stale, newHTTP, newGRPC, newStreams, newRoots)
		for m, o := range s.applied {
			if o.epoch == s.epoch {
				continue
			}
			if n := replaced[routeKey(o.kind, m)]; n != nil && !stale[m] && sameGeneration(m, n) {
				t.rekey(o, n)
				continue
			}
			tookBackStream = tookBackStream || o.isStream()
			t.takeBack(o)
			delete(s.applied, m)
		}
		if len(replaced) > 0 {
			newHTTP = notApplied(s, newHTTP, func(r *gatewayv1.HTTPRoute) *metav1.ObjectMeta { return &r.ObjectMeta })
			newGRPC = notApplied(s, newGRPC, func(r *gatewayv1.GRPCRoute) *metav1.ObjectMeta { return &r.ObjectMeta })
			newStreams = notApplied(s, newStreams, func(r *streamRoute) *metav1.ObjectMeta { return r.meta })
			newRoots = notApplied(s, newRoots, func(p *contourv1.HTTPProxy) *metav1.ObjectMeta { return &p.ObjectMeta })
		}
	}
	// A stream route whose object was only replaced keeps its outcome, and
	// so does every other: what each holds depends on the others alone.
	streamsChanged := tookBackStream || len(newStreams) > 0
	if streamsChanged {
		for m, o := range s.applied {
			if o.isStream() {
				t.takeBack(o)
				delete(s.applied, m)
			}
		}
		for _, tb := range s.tables {
			clear(tb.streams)
		}
	}
	// Oldest first, so that the routes' entries reach their virtual
	// hosts in route order (see sortBulk).
	fresh := make([]newRoute, 0, len(newHTTP)+len(newGRPC))
	for _, r := range newHTTP {
		fresh = append(fresh, newRoute{age: ageOf(&r.ObjectMeta), http: r})
	}
	for _, r := range newGRPC {
		fresh = append(fresh, newRoute{age: ageOf(&r.ObjectMeta), grpc: r})
	}
	slices.SortFunc(fresh, func(a, b newRoute) int { return compareAges(a.age, b.age) })
	for i, r := range fresh {
		if r.http != nil {
			t.attachHTTPRoute(r.http, int32(i))
		} else {
			t.attachGRPCRoute(r.grpc, int32(i))
		}
	}
	// Then the routing APIs of lower precedence (see source): the root
	// HTTPProxies, then the Ingresses, each oldest first.
	rank := int32(len(fresh))
	slices.SortFunc(newRoots, func(a, b *contourv1.HTTPProxy) int { return compareRoutes(&a.ObjectMeta, &b.ObjectMeta) })
	for _, p := range newRoots {
		t.attachHTTPProxy(p, rank)
		rank++
	}
	slices.SortFunc(newIngresses, func(a, b *networkingv1.Ingress) int { return compareRoutes(&a.ObjectMeta, &b.ObjectMeta) })
	for _, ing := range newIngresses {
		t.attachIngress(ing, rank)
		rank++
	}
	if streamsChanged {
		for _, r := range t.streams {
			t.attachStreamRoute(r)
		}
	}
}

// withParents returns the routes that have parentRefs, routes itself when
// all have. A route without attaches nowhere and has no status entry of
// ours, so it needs no outcome; and a per-Gateway controller caches the
// routes of other Gateways as stubs without parentRefs, most of its
// routes in a cluster of many Gateways, which would each hold an outcome
// and size the state's maps.
func withParents[T any](routes []*T, parentRefs func(*T) []gatewayv1.ParentReference) []*T {
	for i, r := range routes {
		if len(parentRefs(r)) > 0 {
			continue
		}
		out := slices.Clone(routes[:i])
		for _, r := range routes[i+1:] {
			if len(parentRefs(r)) > 0 {
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
	age  age
	http *gatewayv1.HTTPRoute
	grpc *gatewayv1.GRPCRoute
}

// age is what orders routes of one source among equal matches: the older
// first, then by namespace and name.
type age struct {
	created         int64
	nanos           int32
	namespace, name string
}

func ageOf(meta *metav1.ObjectMeta) age {
	t := meta.CreationTimestamp.Time
	return age{created: t.Unix(), nanos: int32(t.Nanosecond()), namespace: meta.Namespace, name: meta.Name}
}

func compareAges(a, b age) int {
	return cmp.Or(cmp.Compare(a.created, b.created), cmp.Compare(a.nanos, b.nanos),
		strings.Compare(a.namespace, b.namespace), strings.Compare(a.name, b.name))
}

// compareRoutes is compareAges for route objects.
func compareRoutes(a, b *metav1.ObjectMeta) int {
	if a == b {
		return 0
	}
	return compareAges(ageOf(a), ageOf(b))
}

// unseen marks the routes the state holds as seen in this translation, and
// returns the others and how many it marked. A stale route is not marked:
// its outcome is taken back and it is attached again.
func unseen[T any](s *gatewayState, stale map[*metav1.ObjectMeta]bool, routes []*T, meta func(*T) *metav1.ObjectMeta) ([]*T, int) {
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

// replacements are the new objects of routes that may be replacing an
// object of the same route in the state, by route: those whose deps did
// not change.
func replacements(stale map[*metav1.ObjectMeta]bool, http []*gatewayv1.HTTPRoute, grpc []*gatewayv1.GRPCRoute, streams []*streamRoute, roots []*contourv1.HTTPProxy) map[RouteKey]*metav1.ObjectMeta {
	n := len(http) + len(grpc) + len(streams) + len(roots)
	if n == 0 {
		return nil
	}
	out := make(map[RouteKey]*metav1.ObjectMeta, n)
	add := func(kind gatewayv1.Kind, m *metav1.ObjectMeta) {
		if !stale[m] {
			out[routeKey(string(kind), m)] = m
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
	for _, r := range roots {
		add("HTTPProxy", &r.ObjectMeta)
	}
	return out
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
// keep the old object: the state's readers
// and the virtual hosts' entries move to the new one.
func (t *gatewayTranslator) rekey(o *outcome, meta *metav1.ObjectMeta) {
	s := t.state
	s.removeReader(o)
	for _, a := range o.added {
		tb := t.table(t.listeners[a.listener])
		for _, h := range a.hosts {
			tb.hosts[h].rekey(o.meta, meta, a.routes)
		}
	}
	delete(s.applied, o.meta)
	o.meta, o.epoch = meta, s.epoch
	s.applied[meta] = o
	s.addReader(o)
}

// notApplied returns the routes whose objects the state does not hold.
func notApplied[T any](s *gatewayState, routes []*T, meta func(*T) *metav1.ObjectMeta) []*T {
	out := routes[:0:0]
	for _, r := range routes {
		if _, ok := s.applied[meta(r)]; !ok {
			out = append(out, r)
		}
	}
	return out
}

// record starts the outcome of attaching a route, whose place among the
// routes attached with it is rank; it returns nil when the route's object
// is already in the state (a snapshot that lists it twice).
func (t *gatewayTranslator) record(kind gatewayv1.Kind, meta *metav1.ObjectMeta, rank int32) *outcome {
	if _, done := t.state.applied[meta]; done {
		return nil
	}
	return &outcome{kind: string(kind), source: sourceOf(kind), meta: meta, epoch: t.state.epoch, rank: rank}
}

// apply adds a recorded outcome to the state.
func (t *gatewayTranslator) apply(o *outcome) {
	s := t.state
	s.applied[o.meta] = o
	for _, i := range o.counted {
		s.attached[i]++
	}
	for _, c := range o.clusters {
		s.clusters[c]++
	}
	if o.shared != nil {
		s.shared[o.shared.name] = o.shared
	}
	s.addReader(o)

	for _, a := range o.added {
		t.addRoutes(t.listeners[a.listener], a.hosts, o, a.routes)
	}
	if len(o.statuses) > 0 {
		// Clipped, so that a later append copies instead of writing into
		// the outcome.
		s.routes[routeKey(o.kind, o.meta)] = o.statuses[:len(o.statuses):len(o.statuses)]
	}
}

// takeBack subtracts an outcome from the state. A TLS, TCP or UDP route's
// claims on its listeners go with all the others' (see update).
func (t *gatewayTranslator) takeBack(o *outcome) {
	s := t.state
	for _, i := range o.counted {
		s.attached[i]--
	}
	for _, c := range o.clusters {
		if s.clusters[c]--; s.clusters[c] <= 0 {
			delete(s.clusters, c)
		}
	}
	if o.shared != nil {
		delete(s.shared, o.shared.name)
	}
	s.removeReader(o)

	for _, a := range o.added {
		t.removeRoutes(t.listeners[a.listener], a.hosts, o, a.routes)
	}
	if len(o.statuses) > 0 {
		delete(s.routes, routeKey(o.kind, o.meta))
	}
}
