// Package xdsserver serves a fleet's Envoy configuration over ADS (state of
// the world and delta) and tracks what each connected Envoy has
// acknowledged.
//
// Resources are held in one go-control-plane LinearCache per type, updated
// with only the resources that changed, so an Envoy receives (over delta
// xDS) only what changed, and each resource is marshalled once per version
// and the bytes shared by every stream: the cost of a push does not grow
// with the number of connected Envoys, as it does with go-control-plane's
// snapshot cache, which marshals per response.
package xdsserver

import (
	"context"
	"fmt"
	"strconv"
	"sync"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	clusterservice "github.com/envoyproxy/go-control-plane/envoy/service/cluster/v3"
	discoverygrpc "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	endpointservice "github.com/envoyproxy/go-control-plane/envoy/service/endpoint/v3"
	listenerservice "github.com/envoyproxy/go-control-plane/envoy/service/listener/v3"
	routeservice "github.com/envoyproxy/go-control-plane/envoy/service/route/v3"
	runtimeservice "github.com/envoyproxy/go-control-plane/envoy/service/runtime/v3"
	secretservice "github.com/envoyproxy/go-control-plane/envoy/service/secret/v3"
	"github.com/envoyproxy/go-control-plane/pkg/cache/types"
	"github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"github.com/envoyproxy/go-control-plane/pkg/server/v3"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	"isobar.dev/controller/pkg/envoyversion"
	"isobar.dev/controller/pkg/xds"
	"isobar.dev/controller/pkg/xdscheck"
)

// pushOrder is the order in which types are updated: what a resource refers
// to first (clusters before the routes that use them, endpoints before
// nothing waits on them), removals in reverse.
var pushOrder = []string{
	// The runtime layer first: a new listener's connection limit holds
	// before the listener does.
	resourcev3.RuntimeType,
	resourcev3.SecretType,
	resourcev3.ClusterType,
	resourcev3.EndpointType,
	resourcev3.ListenerType,
	resourcev3.RouteType,
}

// Server is one fleet's xDS server.
type Server struct {
	// caches hold each type's resources for each class of Envoy release
	// (envoyversion.Class): "" the configuration as translated, the
	// others without the fields their releases lack. They are updated
	// together, so their versions are one.
	caches map[cacheKey]*cache.LinearCache
	// strip makes a resource of a type what a class is sent; nil when
	// the class is sent the resources as they are.
	strip map[cacheKey]func(proto.Message) proto.Message
	xds   server.Server

	// changes is signalled (without blocking) whenever the fleet's state
	// changes: a stream opens or closes, or an Envoy answers.
	changes chan struct{}

	mu       sync.Mutex
	current  map[string]map[string]proto.Message // type -> name -> resource
	versions map[string]uint64                   // type -> the cache's version counter
	// changedAt is the version at which each resource last changed or
	// was removed: what a stream that subscribes to it must have
	// acknowledged. The cache answers a stream only when a resource it
	// subscribes to changes, so comparing with the type's version would
	// wait forever for a stream that is not sent the change (a removed
	// route configuration over state of the world, a cluster another
	// Envoy subscribes to).
	changedAt map[string]map[string]uint64
	// removed are the names in changedAt that are no longer served; they
	// are forgotten once no stream subscribes to them.
	removed map[string]map[string]bool
	streams map[int64]*stream
	acks    uint64
	nacks   uint64

	// slots bound the streams in their first push (nil: no bound), and
	// waiting counts those waiting for a slot.
	slots   chan struct{}
	waiting int
}

// Options tune a Server.
type Options struct {
	// FirstPushes bounds how many Envoys are sent their first
	// configuration at once. A stream waits for a slot before it is
	// served, and gives it back once it has answered a response of each
	// type it was sent, or closes: a reconnect storm of a thousand
	// Envoys holds that many copies of the configuration in send
	// buffers, not a thousand. 0 is no bound.
	FirstPushes int
}

// stream is what one Envoy's connection has been sent and has answered.
type stream struct {
	node  string
	delta bool
	sent  map[string]string // type -> version of the last response
	nonce map[string]string // type -> nonce of the last delta response
	acked map[string]string // type -> last version acknowledged
	nack  map[string]string // type -> error of the last rejection, until an ACK
	subs  map[string]*subscription
	// slot says the stream holds a first-push slot.
	slot bool
}

// configured reports whether the stream has been sent configuration: a
// type other than the runtime layer, which Envoy asks for, and answers,
// before it asks for anything else.
func (str *stream) configured() bool {
	for typ := range str.sent {
		if typ != resourcev3.RuntimeType {
			return true
		}
	}
	return false
}

// firstPushDone reports whether the stream has been sent configuration
// and has answered a response of every type it was sent.
func (str *stream) firstPushDone() bool {
	if !str.configured() {
		return false
	}
	for typ := range str.sent {
		if _, ok := str.acked[typ]; !ok {
			if _, ok := str.nack[typ]; !ok {
				return false
			}
		}
	}
	return true
}

// subscription is what a stream asked for of one type: every resource
// (wildcard) or the named ones.
type subscription struct {
	wildcard bool
	names    map[string]bool
}

// cacheKey names the cache of a type for a class of Envoy release.
type cacheKey struct{ typ, class string }

// classes are the classes of Envoy release served, "" (every field) first.
var classes = append([]string{""}, envoyversion.Classes()...)

// New returns a server with no resources.
func New(ctx context.Context, opts Options) *Server {
	s := &Server{
		caches:    map[cacheKey]*cache.LinearCache{},
		strip:     map[cacheKey]func(proto.Message) proto.Message{},
		current:   map[string]map[string]proto.Message{},
		versions:  map[string]uint64{},
		changedAt: map[string]map[string]uint64{},
		removed:   map[string]map[string]bool{},
		streams:   map[int64]*stream{},
		changes:   make(chan struct{}, 1),
	}
	if opts.FirstPushes > 0 {
		s.slots = make(chan struct{}, opts.FirstPushes)
	}
	// An Envoy is served from its type's cache for its release's class;
	// the server keeps the node of a stream's first request on the
	// others.
	mux := &cache.MuxCache{
		Classify:      func(r *cache.Request) string { return muxKey(r.GetTypeUrl(), r.GetNode()) },
		ClassifyDelta: func(r *cache.DeltaRequest) string { return muxKey(r.GetTypeUrl(), r.GetNode()) },
		Caches:        map[string]cache.Cache{},
	}
	for _, t := range pushOrder {
		for _, c := range classes {
			k := cacheKey{t, c}
			s.caches[k] = cache.NewLinearCache(t)
			s.strip[k] = stripper(t, c)
			mux.Caches[classKey(t, c)] = s.caches[k]
		}
		s.current[t] = map[string]proto.Message{}
		s.changedAt[t] = map[string]uint64{}
		s.removed[t] = map[string]bool{}
	}
	s.xds = server.NewServer(ctx, mux, s.callbacks())
	return s
}

// Register adds the ADS and the per-type discovery services to g.
func (s *Server) Register(g *grpc.Server) {
	discoverygrpc.RegisterAggregatedDiscoveryServiceServer(g, s.xds)
	clusterservice.RegisterClusterDiscoveryServiceServer(g, s.xds)
	endpointservice.RegisterEndpointDiscoveryServiceServer(g, s.xds)
	listenerservice.RegisterListenerDiscoveryServiceServer(g, s.xds)
	routeservice.RegisterRouteDiscoveryServiceServer(g, s.xds)
	secretservice.RegisterSecretDiscoveryServiceServer(g, s.xds)
	runtimeservice.RegisterRuntimeDiscoveryServiceServer(g, s.xds)
}

// Update makes r the served configuration, pushing only the resources that
// changed, and returns how many did. It refuses a set that go-control-plane
// does not find consistent.
func (s *Server) Update(r *xds.Resources) (int, error) {
	next := map[string]map[string]proto.Message{
		resourcev3.ListenerType: {}, resourcev3.RouteType: {}, resourcev3.ClusterType: {},
		resourcev3.EndpointType: {}, resourcev3.SecretType: {}, resourcev3.RuntimeType: {},
	}
	for _, m := range r.Listeners {
		next[resourcev3.ListenerType][m.Name] = m
	}
	for _, m := range r.Routes {
		next[resourcev3.RouteType][m.Name] = m
	}
	for _, m := range r.Clusters {
		next[resourcev3.ClusterType][m.Name] = m
	}
	for _, m := range r.Endpoints {
		next[resourcev3.EndpointType][m.ClusterName] = m
	}
	for _, m := range r.Secrets {
		next[resourcev3.SecretType][m.Name] = m
	}
	for _, m := range r.Runtimes {
		next[resourcev3.RuntimeType][m.Name] = m
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	updates := map[string]map[string]types.Resource{}
	deletions := map[string][]string{}
	for _, t := range pushOrder {
		update := map[string]types.Resource{}
		for name, m := range next[t] {
			if old, ok := s.current[t][name]; !ok || !xds.Equal(old, m) {
				update[name] = m
			}
		}
		for name := range s.current[t] {
			if _, ok := next[t][name]; !ok {
				deletions[t] = append(deletions[t], name)
			}
		}
		updates[t] = update
	}
	// An inconsistent set (a route configuration or endpoint assignment
	// missing or left over) would have Envoy wait for what never comes:
	// the fleet keeps the last consistent one instead. Only what refers
	// (listeners, clusters) and the names referred to can make a
	// consistent set inconsistent, so the check, which opens every filter
	// chain, runs only when those change.
	if s.referencesChanged(updates, deletions) {
		if err := xdscheck.Consistent(r); err != nil {
			return 0, err
		}
	}
	changed := 0
	// Additions and changes in push order, then removals in reverse, so
	// nothing is removed while something still refers to it.
	for _, t := range pushOrder {
		update := updates[t]
		if len(update) == 0 {
			continue
		}
		if err := s.updateCaches(t, update, nil); err != nil {
			return changed, err
		}
		s.versions[t]++
		for name := range update {
			s.changedAt[t][name] = s.versions[t]
			delete(s.removed[t], name)
		}
		changed += len(update)
	}
	for i := len(pushOrder) - 1; i >= 0; i-- {
		t := pushOrder[i]
		if len(deletions[t]) == 0 {
			continue
		}
		if err := s.updateCaches(t, nil, deletions[t]); err != nil {
			return changed, err
		}
		s.versions[t]++
		for _, name := range deletions[t] {
			s.changedAt[t][name] = s.versions[t]
			s.removed[t][name] = true
		}
		changed += len(deletions[t])
	}
	s.current = next
	s.forgetRemoved()
	return changed, nil
}

// forgetRemoved drops removed resources no stream subscribes to by name:
// a stream that subscribes later was never sent them.
func (s *Server) forgetRemoved() {
	for t, names := range s.removed {
		for name := range names {
			wanted := false
			for _, str := range s.streams {
				wanted = wanted || str.subs[t] != nil && str.subs[t].names[name]
			}
			if !wanted {
				delete(names, name)
				delete(s.changedAt[t], name)
			}
		}
	}
}

// referencesChanged reports whether an update changes a listener or a
// cluster, or adds or removes a route configuration or endpoint
// assignment.
func (s *Server) referencesChanged(updates map[string]map[string]types.Resource, deletions map[string][]string) bool {
	if len(updates[resourcev3.ListenerType]) > 0 || len(updates[resourcev3.ClusterType]) > 0 ||
		len(deletions[resourcev3.ListenerType]) > 0 || len(deletions[resourcev3.ClusterType]) > 0 ||
		len(deletions[resourcev3.RouteType]) > 0 || len(deletions[resourcev3.EndpointType]) > 0 {
		return true
	}
	for _, t := range []string{resourcev3.RouteType, resourcev3.EndpointType} {
		for name := range updates[t] {
			if _, ok := s.current[t][name]; !ok {
				return true
			}
		}
	}
	return false
}

// UpdateEndpoints replaces the ClusterLoadAssignments of clusters already
// served, pushing only those that changed: the fast path for endpoint-only
// changes, which leaves every other type as it is. Assignments of clusters
// not served are ignored; the next full Update adds them.
func (s *Server) UpdateEndpoints(loadAssignments []*endpointv3.ClusterLoadAssignment) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	current := s.current[resourcev3.EndpointType]
	update := map[string]types.Resource{}
	for _, cla := range loadAssignments {
		if old, ok := current[cla.ClusterName]; ok && !xds.Equal(old, cla) {
			update[cla.ClusterName] = cla
		}
	}
	if len(update) == 0 {
		return 0, nil
	}
	if err := s.updateCaches(resourcev3.EndpointType, update, nil); err != nil {
		return 0, err
	}
	s.versions[resourcev3.EndpointType]++
	for k, v := range update {
		current[k] = v.(proto.Message)
		s.changedAt[resourcev3.EndpointType][k] = s.versions[resourcev3.EndpointType]
	}
	return len(update), nil
}

// updateCaches updates the caches of type t for every class, each with
// the resources as its class is sent them.
func (s *Server) updateCaches(t string, update map[string]types.Resource, deletions []string) error {
	for _, c := range classes {
		k := cacheKey{t, c}
		classUpdate := update
		if strip := s.strip[k]; strip != nil && len(update) > 0 {
			classUpdate = make(map[string]types.Resource, len(update))
			for name, r := range update {
				classUpdate[name] = strip(r.(proto.Message))
			}
		}
		if err := s.caches[k].UpdateResources(classUpdate, deletions); err != nil {
			return fmt.Errorf("updating %s for Envoys of class %q: %w", t, c, err)
		}
	}
	return nil
}

// stripper is envoyversion.Stripper, for route configurations over
// their virtual hosts too: the translator hands those out encoded, where
// a walk over the message does not see them.
func stripper(typ, class string) func(proto.Message) proto.Message {
	strip := envoyversion.Stripper(typ, class)
	if strip == nil || typ != resourcev3.RouteType {
		return strip
	}
	return func(m proto.Message) proto.Message {
		d, err := xds.Decoded(&xds.Resources{Routes: []*routev3.RouteConfiguration{m.(*routev3.RouteConfiguration)}})
		if err != nil {
			return m
		}
		if out := strip(d.Routes[0]); out != d.Routes[0] {
			return out
		}
		return m
	}
}

// muxKey is the cache an Envoy of node is served a type from.
func muxKey(typ string, node *corev3.Node) string {
	return classKey(typ, envoyversion.Class(envoyversion.Of(node)))
}

func classKey(typ, class string) string {
	if class == "" {
		return typ
	}
	return typ + " " + class
}

// version is the cache's version string of a type, as responses carry it.
func (s *Server) version(t string) string {
	return strconv.FormatUint(s.versions[t], 10)
}

// Changes signals that Status may have changed.
func (s *Server) Changes() <-chan struct{} { return s.changes }

func (s *Server) notify() {
	select {
	case s.changes <- struct{}{}:
	default:
	}
}

// needed is the version a stream must have acknowledged of a type to
// hold every resource it subscribes to as it is now.
func (s *Server) needed(t string, sub *subscription) uint64 {
	if sub == nil || sub.wildcard {
		return s.versions[t]
	}
	var v uint64
	for name := range sub.names {
		v = max(v, s.changedAt[t][name])
	}
	return v
}

// FleetStatus is what the connected Envoys have done with the
// configuration.
type FleetStatus struct {
	// Connected counts open streams (one per Envoy with ADS).
	Connected int
	// Acknowledged says every connected Envoy has acknowledged the current
	// version of every type it subscribed to.
	Acknowledged bool
	// Rejections are Envoys' error messages for configuration they
	// rejected, "node: type: message".
	Rejections []string
}

// Status reports the fleet's state.
func (s *Server) Status() FleetStatus {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := FleetStatus{Connected: len(s.streams), Acknowledged: true}
	for _, str := range s.streams {
		for t := range str.sent {
			acked, err := strconv.ParseUint(str.acked[t], 10, 64)
			if err != nil || acked < s.needed(t, str.subs[t]) {
				st.Acknowledged = false
			}
			if msg, ok := str.nack[t]; ok {
				st.Rejections = append(st.Rejections, fmt.Sprintf("%s: %s: %s", str.node, t, msg))
			}
		}
	}
	return st
}

// A Mark is the version of each type the server held at a moment: what
// a configuration served then is, for Holding.
type Mark map[string]uint64

// Mark returns the versions the server holds now.
func (s *Server) Mark() Mark {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := make(Mark, len(s.versions))
	for t, v := range s.versions {
		m[t] = v
	}
	return m
}

// Holding counts the connected Envoys that hold the configuration served
// at m, or a newer one: each has acknowledged, for every type it was
// sent, what of it was served at m (see neededAt). An Envoy that has not
// yet acknowledged its first push holds nothing, so one joining a serving
// fleet does not change the count of those that serve; nor does a change
// pushed after m, in flight.
func (s *Server) Holding(m Mark) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, str := range s.streams {
		holds := str.configured()
		for t := range str.sent {
			acked, err := strconv.ParseUint(str.acked[t], 10, 64)
			if err != nil || acked < s.neededAt(t, str.subs[t], m[t]) {
				holds = false
				break
			}
		}
		if holds {
			n++
		}
	}
	return n
}

// neededAt is the version of type t a stream subscribed as sub must have
// acknowledged to hold what was served at version at: at itself for a
// wildcard subscription, else the last change at or before it of the
// resources it names. A resource changed since at is not counted: its
// version at at is no longer known, and the stream is sent its newest.
func (s *Server) neededAt(t string, sub *subscription, at uint64) uint64 {
	if sub == nil || sub.wildcard {
		return at
	}
	var v uint64
	for name := range sub.names {
		if c := s.changedAt[t][name]; c <= at {
			v = max(v, c)
		}
	}
	return v
}

// Counters are the server's totals for metrics.
type Counters struct {
	Connected   int
	ACKs, NACKs uint64
	// FirstPushes counts the streams in their first push, and Waiting
	// those waiting for a slot to begin it (see Options.FirstPushes).
	FirstPushes, Waiting int
	// Versions is each type's version counter, as responses carry it.
	Versions map[string]uint64
}

// Counters reports the server's totals.
func (s *Server) Counters() Counters {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := Counters{Connected: len(s.streams), ACKs: s.acks, NACKs: s.nacks, FirstPushes: len(s.slots), Waiting: s.waiting, Versions: make(map[string]uint64, len(s.versions))}
	for t, v := range s.versions {
		c.Versions[t] = v
	}
	return c
}
