// Package xds is the second translation stage: one Gateway's IR in, the
// Envoy resources that implement it out (Listeners, RouteConfigurations,
// Clusters, ClusterLoadAssignments, Secrets). It knows Envoy, not the Gateway
// API. Like the first stage it is pure and deterministic: the same IR gives
// the same resources, in the same order.
package xds

import (
	"reflect"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	runtimev3 "github.com/envoyproxy/go-control-plane/envoy/service/runtime/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"isobar.dev/controller/pkg/ir"
)

// Resources are the Envoy resources of one Gateway, each kind ordered by
// name. A Translator's route configurations have their virtual hosts
// encoded; Decoded gives them as messages.
type Resources struct {
	Listeners []*listenerv3.Listener
	Routes    []*routev3.RouteConfiguration
	Clusters  []*clusterv3.Cluster
	Endpoints []*endpointv3.ClusterLoadAssignment
	Secrets   []*tlsv3.Secret
	// Runtimes holds the one runtime layer every Envoy's bootstrap
	// subscribes to (envoyruntime.Layer), empty when no setting needs a
	// key: Envoy waits for it before it asks for anything else, so it is
	// always there.
	Runtimes []*runtimev3.Runtime
}

// ByType lists the resources by their type URL.
func (r *Resources) ByType() map[string][]proto.Message {
	out := map[string][]proto.Message{}
	for _, m := range r.Listeners {
		out[resourcev3.ListenerType] = append(out[resourcev3.ListenerType], m)
	}
	for _, m := range r.Routes {
		out[resourcev3.RouteType] = append(out[resourcev3.RouteType], m)
	}
	for _, m := range r.Clusters {
		out[resourcev3.ClusterType] = append(out[resourcev3.ClusterType], m)
	}
	for _, m := range r.Endpoints {
		out[resourcev3.EndpointType] = append(out[resourcev3.EndpointType], m)
	}
	for _, m := range r.Secrets {
		out[resourcev3.SecretType] = append(out[resourcev3.SecretType], m)
	}
	for _, m := range r.Runtimes {
		out[resourcev3.RuntimeType] = append(out[resourcev3.RuntimeType], m)
	}
	return out
}

// UnresolvedBackendCluster is the name a route gives the share of traffic
// of backendRefs that did not resolve. No cluster has it (route
// configurations do not validate cluster names), so Envoy answers that
// share with the route's cluster_not_found_response_code, 500, as the
// Gateway API asks; when every backend of a rule is invalid the route
// answers 500 directly instead.
const UnresolvedBackendCluster = "isobar/unresolved-backend"

// InvalidBackendCluster is a cluster without endpoints for TCP and TLS
// routes without a usable backend: Envoy closes their connections at once.
const InvalidBackendCluster = "isobar/invalid-backend"

// Translate builds the Envoy resources of g, with the route
// configurations decoded (see Decoded): the form to read and check.
func Translate(g *ir.Gateway, s Settings) (*Resources, error) {
	r, err := NewTranslator(s).Translate(g)
	if err != nil {
		return nil, err
	}
	return Decoded(r)
}

// Translator builds the Envoy resources of one Gateway again and again.
// When the IR comes with the changes since the IR it translated last (see
// ir.Changes), it builds again only what they name: a listener not named
// is what it built last, and in a route table built again, a virtual host
// not named keeps its encoding. In a virtual host built again, a route
// that was in it before keeps its bytes: the first stage hands out the
// same *ir.Route, immutable, while the route's rules are unchanged. The
// route configurations it returns are in the form they are served in:
// their virtual hosts encoded, as the message's unknown fields. Use one
// per Gateway.
type Translator struct {
	settings Settings
	// actions are the shared actions of routes to a single cluster, and
	// encodedVhosts the virtual hosts encoded, by name, for the
	// translation under way: a virtual host in the route tables of several
	// listeners (HTTP and HTTPS, most often) is built and marshalled once.
	actions       map[string]*routev3.Route_Route
	encodedVhosts map[string][]encodedVirtualHost
	// messages are those of the route being encoded, cleared after each
	// route with their arrays kept; encodings are the bytes of the routes
	// built for the virtual host being encoded, for the translation under
	// way.
	messages  routeMessages
	encodings []byte
	// serial is the IR translated last, and listeners what was built of
	// it, by name; changes are the IR's under way when they are to that
	// IR, nil when everything is to be built.
	serial    uint64
	listeners map[string]*builtListener
	changes   *ir.Changes
	// rateLimit and tracing are the rate limit service and the tracer
	// the listeners were built with.
	rateLimit      *ir.RateLimitService
	tracing        *ir.Tracing
	extAuthHeaders [][]string
	// globalExtAuth is the Gateway's global authorization server, which
	// every route's encoding depends on: when it changes, nothing built
	// is kept.
	globalExtAuth *ir.GlobalExtAuth
}

// builtListener is a listener as built last, with the route
// configurations and HTTPS filter chains it was built with, by name (a
// chain by its route configuration's).
type builtListener struct {
	listener     *listenerv3.Listener
	routes       []*routev3.RouteConfiguration
	routeConfigs map[string]*builtRouteConfig
	chains       map[string]*listenerv3.FilterChain
}

// NewTranslator returns a Translator with an empty cache.
func NewTranslator(s Settings) *Translator {
	return &Translator{settings: s}
}

// Translate builds the Envoy resources of g.
func (x *Translator) Translate(g *ir.Gateway) (*Resources, error) {
	x.actions, x.encodedVhosts = map[string]*routev3.Route_Route{}, map[string][]encodedVirtualHost{}
	x.changes = nil
	// Every connection manager has the rate limit service, the tracer
	// and the ext_authz filters: when one changes, every listener does.
	if g.Changes != nil && x.serial != 0 && g.Changes.Base == x.serial && reflect.DeepEqual(g.RateLimit, x.rateLimit) && reflect.DeepEqual(g.Tracing, x.tracing) &&
		reflect.DeepEqual(g.ExtAuthHeaders, x.extAuthHeaders) {
		x.changes = g.Changes
	}
	if !reflect.DeepEqual(g.ExtAuth, x.globalExtAuth) {
		x.listeners, x.changes, x.globalExtAuth = nil, nil, g.ExtAuth
	}
	// A translation that fails leaves nothing to build on.
	x.serial = 0
	defer func() { x.actions, x.encodedVhosts, x.encodings, x.changes = nil, nil, nil, nil }()
	s := x.settings
	s.RateLimit, s.Tracing, s.ExtAuthHeaders = g.RateLimit, g.Tracing, g.ExtAuthHeaders
	out := &Resources{}
	invalidUsed := false
	built := make(map[string]*builtListener, len(g.Listeners))
	for _, l := range g.Listeners {
		b := x.listeners[l.Name]
		if b == nil || !x.changes.KeepsListener(l.Name) {
			var err error
			if b, err = x.translateListener(l, s, b); err != nil {
				return nil, err
			}
		}
		built[l.Name] = b
		invalidUsed = invalidUsed || needsNoBackend(l)
		out.Listeners = append(out.Listeners, b.listener)
		out.Routes = append(out.Routes, b.routes...)
	}
	x.listeners, x.serial, x.rateLimit, x.tracing, x.extAuthHeaders = built, g.Serial, g.RateLimit, g.Tracing, g.ExtAuthHeaders
	for _, c := range g.Clusters {
		out.Clusters = append(out.Clusters, cluster(c, s))
		if !c.DNS {
			out.Endpoints = append(out.Endpoints, LoadAssignment(c))
		}
	}
	if invalidUsed {
		out.Clusters = append(out.Clusters, invalidBackendCluster(s))
	}
	for _, sec := range g.Secrets {
		out.Secrets = append(out.Secrets, secret(sec))
	}
	out.Runtimes = []*runtimev3.Runtime{runtimeLayer(out.Listeners, s)}
	sortByName(out)
	return out, nil
}

// typed packs a message into an Any; the messages packed here are always
// valid, so an error is a programming mistake.
func typed(m proto.Message) *anypb.Any {
	// Deterministic: a message with a map (a route's authorization
	// context) must encode to the same bytes every time, or an unchanged
	// resource would look changed to the Envoys.
	a := &anypb.Any{}
	if err := anypb.MarshalFrom(a, m, proto.MarshalOptions{Deterministic: true}); err != nil {
		panic("packing " + string(m.ProtoReflect().Descriptor().FullName()) + ": " + err.Error())
	}
	return a
}

// needsNoBackend reports whether a TCP, UDP or TLS destination has no
// backend and so forwards to NoBackendCluster.
func needsNoBackend(l *ir.Listener) bool {
	empty := func(d *ir.Destination) bool { return d != nil && len(d.Backends) == 0 }
	if empty(l.TCP) || empty(l.UDP) {
		return true
	}
	for _, c := range l.Chains {
		if empty(c.TCP) {
			return true
		}
	}
	return false
}
