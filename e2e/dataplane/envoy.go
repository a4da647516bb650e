package dataplane

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"slices"
	"sync"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"isobar.dev/api/imagetag"
	"isobar.dev/controller/pkg/envoysim"
	"isobar.dev/controller/pkg/envoyversion"
	"isobar.dev/controller/pkg/xdscheck"
)

// Dialer opens a connection to host:port as the Pod's network would: the
// caller resolves Service names.
type Dialer func(ctx context.Context, address string) (net.Conn, error)

// Envoy is one simulated Envoy connected to its xDS server.
type Envoy struct {
	boot   *Bootstrap
	conn   *grpc.ClientConn
	cancel context.CancelFunc
	done   chan struct{}

	mu sync.Mutex
	// resources holds what was applied, per type and name.
	resources map[string]map[string]proto.Message
	versions  map[string]map[string]string
	// received says which wildcard types have had their first response.
	received map[string]bool
	// subscribed holds the names asked for of the types Envoy asks for by
	// name (endpoints, routes, secrets).
	subscribed map[string]map[string]bool
	err        error
	changed    chan struct{}
	// stopServing stops the data plane Serve started, and listening
	// says whether it has bound the ports of the state whose change
	// channel is given: Envoy binds a listener's port as it creates the
	// listener, before it reports ready.
	stopServing func()
	listening   func(state <-chan struct{}) bool
	// lastClient is the client address of the last HTTP request, as
	// Envoy took it (the connection's, or its PROXY protocol header's).
	lastClientAddr string
	// sim interprets resources as they are; nil once they change.
	sim *envoysim.Simulator
	// added says when each endpoint of a cluster's assignment came: the
	// zero time for those of its first assignment, which no slow start
	// ramps up.
	added map[string]map[string]time.Time
	// live says its first configuration warmed (Ready).
	live bool
	// runtimeReady says the RTDS layers have come, or been given up on,
	// once: Envoy asks for clusters and listeners only then.
	runtimeReady bool
	// unknown are the fields, Any types and enum values it was sent that
	// its release does not know, each with the resource: a real Envoy of
	// that release warns of each and ignores it.
	unknown []string
	// environment is the Envoy process's environment, where its Pod's is
	// not this process's (nil: this process's).
	environment map[string]string
}

// SetEnvironment gives the Envoy its Pod's environment variables (which
// custom trace tags read), before Serve.
func (e *Envoy) SetEnvironment(env map[string]string) { e.environment = env }

// wildcard are the types Envoy subscribes to as a whole (LDS and CDS over
// ADS); named are those it asks for as its clusters and listeners refer to
// them, in the order it asks.
var (
	wildcard = []string{resourcev3.ClusterType, resourcev3.ListenerType}
	named    = []string{resourcev3.EndpointType, resourcev3.RouteType, resourcev3.SecretType}
)

// Start connects as the bootstrap says and keeps the ADS stream up, opening
// a new one (with the versions it holds, as Envoy does) when it breaks,
// until Stop.
func Start(b *Bootstrap, dial Dialer) (*Envoy, error) {
	if !b.Delta {
		return nil, errors.New("the simulated Envoy speaks delta ADS only; the bootstrap asks for state of the world")
	}
	conn, err := grpc.NewClient("passthrough:///"+b.Address,
		grpc.WithTransportCredentials(credentials.NewTLS(b.TLS)),
		grpc.WithContextDialer(dial),
		// Envoy's envoy_grpc has no message size limit.
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(math.MaxInt32)))
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	e := newEnvoy(b)
	e.conn, e.cancel = conn, cancel
	go e.run(ctx)
	return e, nil
}

// newEnvoy is an Envoy that holds nothing yet.
func newEnvoy(b *Bootstrap) *Envoy {
	e := &Envoy{boot: b, done: make(chan struct{}),
		resources: map[string]map[string]proto.Message{}, versions: map[string]map[string]string{},
		received: map[string]bool{}, subscribed: map[string]map[string]bool{}, changed: make(chan struct{})}
	for _, t := range append(slices.Concat(wildcard, named), resourcev3.RuntimeType) {
		e.resources[t] = map[string]proto.Message{}
		e.versions[t] = map[string]string{}
		e.subscribed[t] = map[string]bool{}
	}
	return e
}

// Stop closes the stream and the connection.
func (e *Envoy) Stop() {
	e.mu.Lock()
	stop := e.stopServing
	e.mu.Unlock()
	if stop != nil {
		stop()
	}
	e.cancel()
	<-e.done
	e.conn.Close()
}

// Node is the bootstrap's node.
func (e *Envoy) Node() *corev3.Node { return e.boot.Node }

// node is what Envoy sends of itself: the bootstrap's node, with its name
// and release.
func (e *Envoy) node() *corev3.Node {
	n := proto.Clone(e.boot.Node).(*corev3.Node)
	if n == nil {
		n = &corev3.Node{}
	}
	v := e.boot.release()
	n.UserAgentName = "envoy"
	n.UserAgentVersionType = &corev3.Node_UserAgentBuildVersion{UserAgentBuildVersion: &corev3.BuildVersion{
		Version: &typev3.SemanticVersion{MajorNumber: uint32(v.Major), MinorNumber: uint32(v.Minor), Patch: uint32(v.Patch)}}}
	return n
}

// Release is the Envoy release played.
func (e *Envoy) Release() imagetag.Version { return e.boot.release() }

// Unknown lists what it was sent that its release does not know.
func (e *Envoy) Unknown() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.unknown)
}

// Resources returns the resources of a type it holds.
func (e *Envoy) Resources(typeURL string) []proto.Message {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make([]proto.Message, 0, len(e.resources[typeURL]))
	for _, m := range e.resources[typeURL] {
		out = append(out, m)
	}
	return out
}

// Synced reports whether clusters and listeners have arrived once, as
// Envoy's initialization waits for, and the last stream error if any.
func (e *Envoy) Synced() (bool, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.received[resourcev3.ClusterType] && e.received[resourcev3.ListenerType], e.err
}

// Ready reports whether Envoy's /ready would answer LIVE: its first
// clusters and listeners have come and warmed, that is every endpoint
// assignment, route configuration and secret they name has come too.
// Envoy is LIVE from then on, whatever later listeners wait for.
func (e *Envoy) Ready() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.live {
		return true
	}
	if !e.received[resourcev3.ClusterType] || !e.received[resourcev3.ListenerType] {
		return false
	}
	if e.listening != nil && !e.listening(e.changed) {
		return false
	}
	for t, names := range references(e.resources[resourcev3.ClusterType], e.resources[resourcev3.ListenerType]) {
		for n := range names {
			if _, ok := e.resources[t][n]; !ok {
				return false
			}
		}
	}
	e.live = true
	return true
}

// Changed returns a channel closed at the next applied response.
func (e *Envoy) Changed() <-chan struct{} {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.changed
}

// Simulator interprets what this Envoy holds now.
func (e *Envoy) Simulator() (*envoysim.Simulator, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.sim != nil {
		return e.sim, nil
	}
	sim, err := envoysim.New(values[*listenerv3.Listener](e.resources[resourcev3.ListenerType]),
		values[*routev3.RouteConfiguration](e.resources[resourcev3.RouteType]),
		values[*clusterv3.Cluster](e.resources[resourcev3.ClusterType]),
		values[*endpointv3.ClusterLoadAssignment](e.resources[resourcev3.EndpointType]),
		values[*tlsv3.Secret](e.resources[resourcev3.SecretType]))
	if err == nil {
		e.sim = sim
	}
	return sim, err
}

// Secret is a secret Envoy holds, or nil: the certificates it presents
// come from here.
func (e *Envoy) Secret(name string) *tlsv3.Secret {
	e.mu.Lock()
	defer e.mu.Unlock()
	s, _ := e.resources[resourcev3.SecretType][name].(*tlsv3.Secret)
	return s
}

func values[T proto.Message](m map[string]proto.Message) []T {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	slices.Sort(names)
	out := make([]T, 0, len(m))
	for _, n := range names {
		out = append(out, m[n].(T))
	}
	return out
}

func (e *Envoy) run(ctx context.Context) {
	defer close(e.done)
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		err := e.stream(ctx)
		e.mu.Lock()
		e.err = err
		e.mu.Unlock()
		select {
		case <-ctx.Done():
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 2*time.Second)
	}
}

// stream runs one ADS stream until it fails.
func (e *Envoy) stream(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	s, err := discoveryv3.NewAggregatedDiscoveryServiceClient(e.conn).DeltaAggregatedResources(ctx)
	if err != nil {
		return err
	}
	first := true
	send := func(r *discoveryv3.DeltaDiscoveryRequest) error {
		// set_node_on_first_message_only, as our bootstraps say.
		if first {
			r.Node = e.node()
			first = false
		}
		return s.Send(r)
	}
	e.mu.Lock()
	layers := e.rtdsLayers()
	waiting := !e.runtimeReady && len(layers) > 0
	var opening []*discoveryv3.DeltaDiscoveryRequest
	if len(layers) > 0 {
		opening = append(opening, &discoveryv3.DeltaDiscoveryRequest{TypeUrl: resourcev3.RuntimeType, ResourceNamesSubscribe: layers,
			InitialResourceVersions: maps(e.versions[resourcev3.RuntimeType])})
	}
	if !waiting {
		opening = append(opening, e.configRequests()...)
	}
	e.mu.Unlock()
	for _, r := range opening {
		if err := send(r); err != nil {
			return err
		}
	}
	// Envoy's first start waits for the RTDS layers, each up to its
	// initial fetch timeout, before it asks for clusters and listeners;
	// a stream opened after that asks for everything at once.
	responses := make(chan *discoveryv3.DeltaDiscoveryResponse)
	failed := make(chan error, 1)
	go func() {
		for {
			resp, err := s.Recv()
			if err != nil {
				failed <- err
				return
			}
			select {
			case responses <- resp:
			case <-ctx.Done():
				return
			}
		}
	}()
	var giveUp <-chan time.Time
	if waiting {
		t := time.NewTimer(e.rtdsTimeout())
		defer t.Stop()
		giveUp = t.C
	}
	runtimeDone := func() error {
		e.mu.Lock()
		e.runtimeReady = true
		requests := e.configRequests()
		e.mu.Unlock()
		waiting, giveUp = false, nil
		for _, r := range requests {
			if err := send(r); err != nil {
				return err
			}
		}
		return nil
	}
	for {
		var resp *discoveryv3.DeltaDiscoveryResponse
		select {
		case err := <-failed:
			return err
		case <-giveUp:
			if err := runtimeDone(); err != nil {
				return err
			}
			continue
		case resp = <-responses:
		}
		if err := e.apply(resp); err != nil {
			// A NACK keeps what Envoy had, with the reason.
			if err := send(&discoveryv3.DeltaDiscoveryRequest{TypeUrl: resp.GetTypeUrl(), ResponseNonce: resp.GetNonce(),
				ErrorDetail: statusOf(err)}); err != nil {
				return err
			}
			// A rejected layer ends the wait too: Envoy starts with
			// what it has.
			if waiting && resp.GetTypeUrl() == resourcev3.RuntimeType {
				if err := runtimeDone(); err != nil {
					return err
				}
			}
			continue
		}
		// Envoy asks for what the new clusters and listeners refer to
		// before it ACKs them (they warm until those arrive).
		for _, r := range e.resubscribe() {
			if err := send(r); err != nil {
				return err
			}
		}
		if err := send(&discoveryv3.DeltaDiscoveryRequest{TypeUrl: resp.GetTypeUrl(), ResponseNonce: resp.GetNonce()}); err != nil {
			return err
		}
		if waiting && e.runtimeCame() {
			if err := runtimeDone(); err != nil {
				return err
			}
		}
	}
}

// configRequests open the subscriptions of everything but the runtime:
// clusters and listeners by wildcard, and what they refer to by name,
// with the versions held. Called with e.mu held.
func (e *Envoy) configRequests() []*discoveryv3.DeltaDiscoveryRequest {
	var out []*discoveryv3.DeltaDiscoveryRequest
	for _, t := range wildcard {
		out = append(out, &discoveryv3.DeltaDiscoveryRequest{TypeUrl: t, InitialResourceVersions: maps(e.versions[t])})
	}
	for _, t := range named {
		if len(e.subscribed[t]) > 0 {
			out = append(out, &discoveryv3.DeltaDiscoveryRequest{TypeUrl: t, ResourceNamesSubscribe: sortedKeys(e.subscribed[t]), InitialResourceVersions: maps(e.versions[t])})
		}
	}
	return out
}

func (e *Envoy) apply(resp *discoveryv3.DeltaDiscoveryResponse) error {
	t := resp.GetTypeUrl()
	decoded := map[string]proto.Message{}
	for _, r := range resp.GetResources() {
		m, err := r.GetResource().UnmarshalNew()
		if err != nil {
			return fmt.Errorf("%s %s: %w", t, r.GetName(), err)
		}
		// Envoy validates every resource before it applies any of a
		// response, and NACKs the whole response for one that fails.
		if err := xdscheck.Resource(m); err != nil {
			return fmt.Errorf("%s %s: %w", t, r.GetName(), err)
		}
		decoded[r.GetName()] = m
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	for name, m := range decoded {
		envoyversion.Walk(m, func(f protoreflect.FullName) {
			if !envoyversion.Knows(e.boot.release(), f) {
				e.unknown = append(e.unknown, fmt.Sprintf("%s %s: %s", t, name, f))
			}
		})
	}
	if _, ok := e.resources[t]; !ok {
		return fmt.Errorf("unexpected type %s", t)
	}
	if t == resourcev3.RuntimeType {
		if err := e.checkRuntime(resp); err != nil {
			return err
		}
	}
	for _, r := range resp.GetResources() {
		if cla, ok := decoded[r.GetName()].(*endpointv3.ClusterLoadAssignment); ok {
			e.endpointsCame(r.GetName(), cla)
		}
		e.resources[t][r.GetName()] = decoded[r.GetName()]
		e.sim = nil
		e.versions[t][r.GetName()] = r.GetVersion()
	}
	for _, n := range resp.GetRemovedResources() {
		if t == resourcev3.EndpointType {
			delete(e.added, n)
		}
		delete(e.resources[t], n)
		delete(e.versions[t], n)
		e.sim = nil
	}
	e.received[t] = true
	close(e.changed)
	e.changed = make(chan struct{})
	return nil
}

// resubscribe returns the subscription changes that the clusters and
// listeners held now call for.
func (e *Envoy) resubscribe() []*discoveryv3.DeltaDiscoveryRequest {
	e.mu.Lock()
	defer e.mu.Unlock()
	want := references(e.resources[resourcev3.ClusterType], e.resources[resourcev3.ListenerType])
	var out []*discoveryv3.DeltaDiscoveryRequest
	for _, t := range named {
		r := &discoveryv3.DeltaDiscoveryRequest{TypeUrl: t}
		for n := range want[t] {
			if !e.subscribed[t][n] {
				r.ResourceNamesSubscribe = append(r.ResourceNamesSubscribe, n)
				e.subscribed[t][n] = true
			}
		}
		for n := range e.subscribed[t] {
			if !want[t][n] {
				r.ResourceNamesUnsubscribe = append(r.ResourceNamesUnsubscribe, n)
				delete(e.subscribed[t], n)
				delete(e.resources[t], n)
				delete(e.versions[t], n)
				e.sim = nil
			}
		}
		if len(r.ResourceNamesSubscribe)+len(r.ResourceNamesUnsubscribe) > 0 {
			slices.Sort(r.ResourceNamesSubscribe)
			slices.Sort(r.ResourceNamesUnsubscribe)
			out = append(out, r)
		}
	}
	return out
}

func maps(m map[string]string) map[string]string {
	if len(m) == 0 {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// endpointsCame records when the endpoints of a cluster's assignment came.
// Called with e.mu held.
func (e *Envoy) endpointsCame(cluster string, cla *endpointv3.ClusterLoadAssignment) {
	eps, err := envoysim.EndpointsOf(cla)
	if err != nil {
		return
	}
	if e.added == nil {
		e.added = map[string]map[string]time.Time{}
	}
	before, seen := e.added[cluster]
	now := map[string]time.Time{}
	for _, ep := range eps {
		switch t, ok := before[ep]; {
		case ok:
			now[ep] = t
		case seen:
			now[ep] = time.Now()
		default:
			now[ep] = time.Time{}
		}
	}
	e.added[cluster] = now
}

// EndpointAge is how long ago an endpoint came into a cluster's
// assignment: long ago for those of the first one.
func (e *Envoy) EndpointAge(cluster, endpoint string) time.Duration {
	e.mu.Lock()
	defer e.mu.Unlock()
	t, ok := e.added[cluster][endpoint]
	if !ok || t.IsZero() {
		return time.Duration(math.MaxInt64)
	}
	return time.Since(t)
}

// lastClient is the client address of the last HTTP request served.
func (e *Envoy) lastClient() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.lastClientAddr
}
