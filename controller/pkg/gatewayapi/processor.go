package gatewayapi

import (
	"fmt"
	"slices"
	"time"

	contourv1alpha1 "github.com/projectcontour/contour/apis/projectcontour/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"isobar.dev/api/v1alpha1"
	"isobar.dev/controller/pkg/backend"
	"isobar.dev/controller/pkg/engine"
	"isobar.dev/controller/pkg/env"
	"isobar.dev/controller/pkg/ir"
	"isobar.dev/controller/pkg/listener"
	"isobar.dev/controller/pkg/resources"
)

// A Processor translates the objects of a routing API other than the
// Gateway API's routes onto the listeners of each Gateway translated.
// Their Source orders them: on one host and match, and on one TLS host, a
// processor's objects rank below the Gateway API's and those of the
// processors of higher precedence. This package knows no such API; the
// orchestrator (package translate) passes them in.
type Processor interface {
	// ForGateway starts the processor's work on one Gateway.
	ForGateway(g *Gateway) GatewayProcessor
}

// A GatewayProcessor is a processor's work on one Gateway, called in the
// phases of the Gateway's translation: Select before the listeners are
// validated, Attach for each of its routes the Gateway's state has not
// seen (or must take back), Report once every route is attached, and
// RateLimit when the Gateway's connection managers are built.
type GatewayProcessor interface {
	// Select picks the processor's objects the Gateway serves.
	Select(res *resources.Resources) Selection
	// Attach adds one of the selected routes to the Gateway's listeners
	// (Gateway.AddHost), as o, and keeps in o.Detail what Report needs.
	Attach(o *Outcome, route *metav1.ObjectMeta)
	// Report records the status of the processor's objects.
	Report()
	// RateLimit is the global rate limit service the Gateway's connection
	// managers use for the processor's routes, or nil.
	RateLimit() *ir.RateLimitService
}

// Selection is what a processor serves on a Gateway.
type Selection struct {
	// Kind is its routes' kind, Source their precedence on a host.
	Kind   gatewayv1.Kind
	Source engine.Source
	// Routes are the objects to attach as routes, each oldest first.
	Routes []*metav1.ObjectMeta
	// Rekeyed says a new object of a route at the same generation (a
	// status write) keeps the old object's outcome; a kind whose routes
	// change at the same generation (with annotations) is not.
	Rekeyed bool
	// Sets are the listeners of the objects' TLS hosts, a set per
	// object, validated with the ListenerSets' and after them.
	Sets []*listener.Set
	// Names, when set, are the Envoy names of the Gateway's listeners
	// its API fixes.
	Names *Names
}

// Names are Envoy names of a Gateway's HTTP and HTTPS listeners.
type Names struct {
	HTTP, HTTPS engine.Names
}

// Outcome is what attaching one route did, as the engine keeps it.
type Outcome = engine.Outcome[any]

// Extensions resolve the ExtensionServices a profile names for every
// connection manager (the tracing collector, the global authorization
// server); the API they belong to is Contour's, so the orchestrator
// supplies them.
type Extensions interface {
	// Server returns the cluster Envoy asks, the requests' :authority and
	// timeout, and the clusters it needs; when the ExtensionService
	// cannot be used, msg says why and cluster is one to build without
	// endpoints.
	Server(e env.Env, names *backend.Names, ref types.NamespacedName, purpose string) (cluster, authority string, timeout time.Duration, clusters []backend.ClusterSpec, msg string)
	// Status is the status of an ExtensionService.
	Status(e env.Env, x *contourv1alpha1.ExtensionService) contourv1alpha1.ExtensionServiceStatus
}

// Gateway is what a processor sees of the Gateway being translated, and
// how it attaches routes to it.
type Gateway struct {
	t *gatewayTranslator
}

// Object is the Gateway.
func (g *Gateway) Object() *gatewayv1.Gateway { return g.t.gw }

// Key is the Gateway's name.
func (g *Gateway) Key() types.NamespacedName { return key(g.t.gw.Namespace, g.t.gw.Name) }

// Controller is the controllerName Isobar serves.
func (g *Gateway) Controller() string { return string(g.t.controller) }

// Profile is the runtimeSettings of the Gateway's profile, never nil.
func (g *Gateway) Profile() *v1alpha1.RuntimeSettings { return g.t.profile }

// Env reads the snapshot without recording: for what is found again on
// every translation.
func (g *Gateway) Env() env.Env { return g.t.env }

// EnvFor reads the snapshot recording in o's reads.
func (g *Gateway) EnvFor(o *Outcome) env.Env { return g.t.newEnv(&o.Reads) }

// Names names the clusters of backends.
func (g *Gateway) Names() *backend.Names { return &g.t.cache.Names }

// Listeners are the Gateway's listeners, validated, its own first (the
// first is the one plain HTTP routes of other APIs attach to). They are
// the Gateway's: a processor reads them and changes nothing.
func (g *Gateway) Listeners() []*listener.Listener { return g.t.listeners }

// AddHost adds routes to the virtual host of a hostname ("" for every
// host) on listener l, as part of o, with the host's own policy when o
// owns the host; each element of rules is a rule of the object, kept
// apart from the others on the host. It reports false when l does not
// serve the hostname; an unusable listener takes nothing, and its own
// status says why.
func (g *Gateway) AddHost(o *Outcome, l *listener.Listener, host string, rules [][]*ir.Route, policy *ir.VirtualHostPolicy) bool {
	return g.t.addHost(o, l, host, rules, policy)
}

// Allows returns why listener l does not allow an HTTPRoute of the
// route's namespace, or "": what its allowedRoutes say of a route of
// another API on it.
func (g *Gateway) Allows(o *Outcome, l *listener.Listener, meta *metav1.ObjectMeta) string {
	return g.t.allows(o, l, route{kind: "HTTPRoute", meta: meta})
}

// Applied is the outcome of a route in the Gateway's state, or nil.
func (g *Gateway) Applied(route *metav1.ObjectMeta) *Outcome { return g.t.state.Applied(route) }

// Shadowed calls f for each route of o that an entry of another object
// with the same match on the same host takes precedence over.
func (g *Gateway) Shadowed(o *Outcome, f func(host string, r *ir.Route, by *metav1.ObjectMeta)) {
	g.t.state.Shadowed(o, f)
}

// DescribeOwner names the object an entry of the state is of.
func (g *Gateway) DescribeOwner(meta *metav1.ObjectMeta) string {
	kind := "route"
	if o := g.t.state.Applied(meta); o != nil {
		kind = o.Kind
	}
	return fmt.Sprintf("%s %s/%s", kind, meta.Namespace, meta.Name)
}

// EnsureCluster builds the cluster of spec for the Gateway.
func (g *Gateway) EnsureCluster(spec backend.ClusterSpec) { g.t.ensureCluster(spec) }

// AddCluster adds a cluster as it is: one without endpoints for a
// service that cannot be used.
func (g *Gateway) AddCluster(c *ir.Cluster) { g.t.clusters[c.Name] = c }

// ReportExtensionService records the status of an ExtensionService.
func (g *Gateway) ReportExtensionService(k types.NamespacedName, st contourv1alpha1.ExtensionServiceStatus) {
	g.t.status.ExtensionServices[k] = st
}

// ExtensionServiceReported says the status of an ExtensionService is
// recorded already.
func (g *Gateway) ExtensionServiceReported(k types.NamespacedName) bool {
	_, ok := g.t.status.ExtensionServices[k]
	return ok
}

// addHost adds routes to the virtual host of a hostname on listener l, as
// part of outcome o (see Gateway.AddHost).
func (t *gatewayTranslator) addHost(o *outcome, l *listener.Listener, host string, rules [][]*ir.Route, policy *ir.VirtualHostPolicy) bool {
	if l == nil || !l.Usable() {
		return true
	}
	var hostnames []gatewayv1.Hostname
	if host != "" {
		hostnames = []gatewayv1.Hostname{gatewayv1.Hostname(host)}
	}
	hosts := t.routeHosts(l, hostnames)
	if len(hosts) == 0 {
		return false
	}
	o.Added = append(o.Added, engine.Addition{Listener: slices.Index(t.listeners, l), Hosts: hosts, Routes: redirectsFor(l, rules), Policy: policy})
	return true
}

// gatewayProcessors starts each processor's work on the Gateway.
func (t *gatewayTranslator) gatewayProcessors(procs []Processor) []GatewayProcessor {
	g := &Gateway{t: t}
	out := make([]GatewayProcessor, len(procs))
	for i, p := range procs {
		out[i] = p.ForGateway(g)
	}
	return out
}

// attachPeer attaches one route of a processor's selection.
func (t *gatewayTranslator) attachPeer(p GatewayProcessor, sel *Selection, meta *metav1.ObjectMeta, rank int32) {
	o := t.state.Record(string(sel.Kind), sel.Source, false, meta, rank)
	if o == nil {
		return
	}
	defer t.state.Apply(o)
	p.Attach(o, meta)
}

// peerRoutes counts the routes of the processors' selections.
func peerRoutes(sels []Selection) int {
	n := 0
	for _, s := range sels {
		n += len(s.Routes)
	}
	return n
}

// peerSet returns the processor's set whose listener l is, or nil.
func peerSet(l *listener.Listener) *listener.Set {
	if l == nil || l.Set == nil || l.Set.IsListenerSet() {
		return nil
	}
	return l.Set
}
