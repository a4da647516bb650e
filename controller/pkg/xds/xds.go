// Package xds is the second translation stage: one Gateway's IR in, the
// Envoy resources that implement it out (Listeners, RouteConfigurations,
// Clusters, ClusterLoadAssignments, Secrets). It knows Envoy, not the Gateway
// API. Like the first stage it is pure and deterministic: the same IR gives
// the same resources, in the same order.
package xds

import (
	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
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

// Translator builds the Envoy resources of one Gateway again and again,
// reusing the encoding of every IR virtual host of a route configuration
// that is unchanged (the first stage hands out the same *ir.VirtualHost
// while its routes are), and in one that changed, of every IR route that
// is (the same *ir.Route). The route configurations it returns are in the
// form they are served in: their virtual hosts encoded, as the message's
// unknown fields. Use one per Gateway.
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
	// chains are HTTPS filter chains, by IR chain.
	chains, freshChains map[*ir.Chain]*listenerv3.FilterChain
	// routeConfigs are by name, with the virtual hosts they were built of.
	routeConfigs, freshRouteConfigs map[string]*builtRouteConfig
	// listeners are by IR listener, which the first stage hands out again
	// while nothing in it changed.
	listeners, freshListeners map[*ir.Listener]*builtListener
	// chainKeys collects the HTTPS chains of the listener being
	// translated.
	chainKeys *[]*ir.Chain
}

type builtListener struct {
	listener  *listenerv3.Listener
	routes    []*routev3.RouteConfiguration
	chainKeys []*ir.Chain
}

// listener translates an IR listener, or returns what it built of the same
// IR last time, keeping the parts in the caches.
func (x *Translator) listener(l *ir.Listener, s Settings) (*listenerv3.Listener, []*routev3.RouteConfiguration, error) {
	if b, ok := x.listeners[l]; ok {
		for _, rc := range b.routes {
			x.freshRouteConfigs[rc.Name] = x.routeConfigs[rc.Name]
		}
		for _, k := range b.chainKeys {
			x.freshChains[k] = x.chains[k]
		}
		x.freshListeners[l] = b
		return b.listener, b.routes, nil
	}
	b := &builtListener{}
	x.chainKeys = &b.chainKeys
	defer func() { x.chainKeys = nil }()
	var err error
	if b.listener, b.routes, err = x.translateListener(l, s); err != nil {
		return nil, nil, err
	}
	x.freshListeners[l] = b
	return b.listener, b.routes, nil
}

// NewTranslator returns a Translator with an empty cache.
func NewTranslator(s Settings) *Translator {
	return &Translator{settings: s}
}

// Translate builds the Envoy resources of g.
func (x *Translator) Translate(g *ir.Gateway) (*Resources, error) {
	x.actions, x.encodedVhosts = map[string]*routev3.Route_Route{}, map[string][]encodedVirtualHost{}
	x.freshChains = make(map[*ir.Chain]*listenerv3.FilterChain, len(x.chains))
	x.freshRouteConfigs = make(map[string]*builtRouteConfig, len(x.routeConfigs))
	x.freshListeners = make(map[*ir.Listener]*builtListener, len(x.listeners))
	defer func() {
		x.listeners, x.freshListeners = x.freshListeners, nil
		x.routeConfigs, x.freshRouteConfigs = x.freshRouteConfigs, nil
		x.chains, x.freshChains = x.freshChains, nil
		x.actions, x.encodedVhosts, x.encodings = nil, nil, nil
	}()
	s := x.settings
	out := &Resources{}
	invalidUsed := false
	for _, l := range g.Listeners {
		listener, routes, err := x.listener(l, s)
		if err != nil {
			return nil, err
		}
		invalidUsed = invalidUsed || needsNoBackend(l)
		out.Listeners = append(out.Listeners, listener)
		out.Routes = append(out.Routes, routes...)
	}
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
	sortByName(out)
	return out, nil
}

// typed packs a message into an Any; the messages packed here are always
// valid, so an error is a programming mistake.
func typed(m proto.Message) *anypb.Any {
	a, err := anypb.New(m)
	if err != nil {
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
