// Package gatewayapi is the first translation stage: Gateway API resources in,
// the IR of each Gateway and the status of every object out. It is pure: no
// Kubernetes client, no goroutines, no clock; the same input always gives the
// same output, so the controller, `isobar-controller translate` and the golden
// tests share it.
//
// The order of work follows the Gateway API: validate each Gateway's
// listeners (ports, protocols, conflicts, certificates), attach routes to
// listeners (parentRefs, allowedRoutes, hostnames), translate the accepted
// rules in precedence order, and resolve backends (with ReferenceGrants).
package gatewayapi

import (
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"strings"

	"k8s.io/apimachinery/pkg/types"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"isobar.dev/controller/pkg/ir"
	"isobar.dev/controller/pkg/resources"
)

// Options select what to translate.
type Options struct {
	// ControllerName is the GatewayClass controllerName Isobar serves.
	ControllerName gatewayv1.GatewayController
	// Gateways limits translation to these Gateways; empty means every
	// Gateway whose class has ControllerName.
	Gateways []types.NamespacedName
}

// Result is the output of a translation.
type Result struct {
	// Gateways holds the IR of each translated Gateway, ordered by name.
	Gateways []*ir.Gateway
	// Status holds what the controller would write.
	Status *Status
}

// Translate translates res once. A Translator does the same, faster when
// it translates snapshot after snapshot.
func Translate(res *resources.Resources, opts Options) *Result {
	return NewTranslator(opts).Translate(res)
}

// Translator translates snapshots and remembers what it can reuse: the
// translated rules of each route, valid while the route object and every
// Service and ReferenceGrant stay the same. Objects in a snapshot must not
// be changed in place (informer caches replace an object when it changes),
// since the cache recognises a route by its pointer.
type Translator struct {
	opts     Options
	rules    map[any]*cachedRules
	outcomes map[*gatewayv1.Gateway]map[any]*outcome
	epoch    uint64
	vhosts   map[string]*sortedVhost
}

// cachedRules is a route's translated rules and what translating them
// found.
type cachedRules struct {
	world    uint64
	routes   [][]*ir.Route
	problems ruleProblems
	resolved []metav1.Condition
	clusters []clusterSpec
}

// NewTranslator returns a Translator with an empty cache.
func NewTranslator(opts Options) *Translator {
	return &Translator{opts: opts, rules: map[any]*cachedRules{}, outcomes: map[*gatewayv1.Gateway]map[any]*outcome{}, vhosts: map[string]*sortedVhost{}}
}

// Translate translates res. It never fails: what cannot be translated is
// reported in the status of the object at fault, and the rest is translated.
func (tr *Translator) Translate(res *resources.Resources) *Result {
	idx := newIndex(res)
	st := newStatus(len(res.HTTPRoutes) + len(res.GRPCRoutes) + len(res.TLSRoutes) + len(res.TCPRoutes) + len(res.UDPRoutes))
	out := &Result{Status: st}
	for _, class := range res.GatewayClasses {
		if class.Spec.ControllerName == tr.opts.ControllerName {
			cs := ClassStatus(class, nil)
			st.GatewayClasses[class.Name] = &cs
		}
	}
	streams := streamRoutes(res)
	c := &cache{
		rules: tr.rules, fresh: map[any]*cachedRules{}, world: idx.world,
		outcomes: tr.outcomes, epoch: tr.epoch + 1, used: map[*gatewayv1.Gateway]int{},
		vhosts: tr.vhosts, freshVhosts: map[string]*sortedVhost{},
	}
	for _, gw := range selectGateways(res, idx, tr.opts) {
		t := &gatewayTranslator{idx: idx, status: st, gw: gw, controller: tr.opts.ControllerName, streams: streams, cache: c}
		out.Gateways = append(out.Gateways, t.translate(res))
	}
	// Keep only what this snapshot used, so deleted routes are forgotten.
	c.sweepOutcomes()
	tr.rules, tr.vhosts, tr.epoch = c.fresh, c.freshVhosts, c.epoch
	return out
}

// cache is a Translator's rule cache during one translation.
type cache struct {
	rules map[any]*cachedRules // from the previous translation
	fresh map[any]*cachedRules // used by this one
	world uint64

	outcomes            map[*gatewayv1.Gateway]map[any]*outcome // persistent; see outcome.epoch
	epoch               uint64
	used                map[*gatewayv1.Gateway]int // outcomes used per Gateway
	vhosts, freshVhosts map[string]*sortedVhost
}

// cachedRules returns the translated rules of route key, translating them
// with translate on a miss.
func (t *gatewayTranslator) cachedRules(key any, generation int64, translate func(resolved *conditions) ([][]*ir.Route, ruleProblems)) ([][]*ir.Route, ruleProblems, conditions) {
	c := t.cache
	hit, ok := c.fresh[key]
	if !ok {
		hit, ok = c.rules[key]
		if ok && hit.world != c.world {
			ok = false
		}
	}
	if ok {
		c.fresh[key] = hit
		for _, s := range hit.clusters {
			t.ensureCluster(s)
		}
		if t.rec != nil {
			t.rec.o.clusters = append(t.rec.o.clusters, hit.clusters...)
		}
		return hit.routes, hit.problems, conditions{generation: generation, list: slices.Clone(hit.resolved)}
	}
	resolved := conditions{generation: generation}
	var specs []clusterSpec
	t.recording = &specs
	routes, problems := translate(&resolved)
	t.recording = nil
	if t.rec != nil {
		t.rec.o.clusters = append(t.rec.o.clusters, specs...)
	}
	c.fresh[key] = &cachedRules{world: c.world, routes: routes, problems: problems, resolved: slices.Clone(resolved.list), clusters: specs}
	return routes, problems, resolved
}

// selectGateways returns the Gateways to translate, ordered by namespace and
// name.
func selectGateways(res *resources.Resources, idx *index, opts Options) []*gatewayv1.Gateway {
	var gws []*gatewayv1.Gateway
	for _, gw := range res.Gateways {
		if len(opts.Gateways) > 0 {
			if slices.Contains(opts.Gateways, types.NamespacedName{Namespace: gw.Namespace, Name: gw.Name}) {
				gws = append(gws, gw)
			}
			continue
		}
		if class, ok := idx.classes[string(gw.Spec.GatewayClassName)]; ok && class.Spec.ControllerName == opts.ControllerName {
			gws = append(gws, gw)
		}
	}
	slices.SortFunc(gws, func(a, b *gatewayv1.Gateway) int {
		return strings.Compare(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name)
	})
	return gws
}

// gatewayTranslator translates one Gateway.
type gatewayTranslator struct {
	idx        *index
	status     *Status
	gw         *gatewayv1.Gateway
	controller gatewayv1.GatewayController

	streams []streamRoute // TLS, TCP and UDP routes, oldest first
	cache   *cache
	// recording collects the clusters that rules being translated use.
	recording *[]clusterSpec
	// ctx is this Gateway's context for outcomes; rec records the outcome
	// of the route being attached.
	ctx gatewayContext
	rec *recorder

	listeners []*listener
	// lost are the listeners where an HTTPRoute or GRPCRoute loses a
	// hostname to a route of the other kind (kindConflicts).
	lost     map[*metav1.ObjectMeta]map[int]string
	clusters map[string]*ir.Cluster
	secrets  map[string]*ir.Secret
	// vhosts collects the routes of each (Envoy listener, route table,
	// domain) before they are sorted into precedence order.
	tables map[gatewayv1.PortNumber]*table
}

func (t *gatewayTranslator) translate(res *resources.Resources) *ir.Gateway {
	t.clusters = map[string]*ir.Cluster{}
	t.secrets = map[string]*ir.Secret{}
	t.tables = map[gatewayv1.PortNumber]*table{}
	t.listeners = t.validateListeners()
	var conflicts uint64
	t.lost, conflicts = t.kindConflicts(res)
	t.ctx = t.context()
	t.ctx.conflicts = conflicts
	for _, r := range res.HTTPRoutes {
		t.attachHTTPRoute(r)
	}
	for _, r := range res.GRPCRoutes {
		t.attachGRPCRoute(r)
	}
	for _, r := range t.streams {
		t.attachStreamRoute(r)
	}
	g := t.build()
	t.writeGatewayStatus()
	return g
}
