// Package gatewayapi translates the Gateway API: Gateway API resources in,
// the IR of each Gateway and the status of every Gateway API object out.
// It validates each Gateway's listeners and keeps the engine's state of
// its routes; the processors of the other routing APIs (see Processor)
// attach their objects to the same listeners and state through it, and
// package translate runs them together. It is pure: no Kubernetes client,
// no goroutines, no clock; the same input always gives the same output.
//
// The order of work follows the Gateway API: validate each Gateway's
// listeners (ports, protocols, conflicts, certificates), attach routes to
// listeners (parentRefs, allowedRoutes, hostnames), translate the accepted
// rules in precedence order, and resolve backends (with ReferenceGrants).
package gatewayapi

import (
	"cmp"
	"slices"
	"strings"

	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"isobar.dev/api/supported"
	"isobar.dev/api/v1alpha1"
	"isobar.dev/controller/pkg/backend"
	"isobar.dev/controller/pkg/backendtls"
	"isobar.dev/controller/pkg/backendtraffic"
	"isobar.dev/controller/pkg/engine"
	"isobar.dev/controller/pkg/env"
	"isobar.dev/controller/pkg/ir"
	"isobar.dev/controller/pkg/listener"
	"isobar.dev/controller/pkg/resources"
)

// Options select what to translate.
type Options struct {
	// ControllerName is the GatewayClass controllerName Isobar serves.
	ControllerName gatewayv1.GatewayController
	// Gateways limits translation to these Gateways; empty means every
	// Gateway whose class has ControllerName.
	Gateways []types.NamespacedName
	// Profile returns the runtimeSettings of a Gateway's profile, as the
	// controller took them; nil, or a nil result, gives the defaults. It
	// is the one way a profile setting reaches translation: the step
	// that needs a setting reads it from the translator's profile.
	Profile func(gateway types.NamespacedName) *v1alpha1.RuntimeSettings
	// Extensions resolve the ExtensionServices a profile names; nil when
	// no profile names one.
	Extensions Extensions
}

// Result is the output of a translation.
type Result struct {
	// Gateways holds the IR of each translated Gateway, ordered by name.
	Gateways []*ir.Gateway
	// Status holds what the controller would write.
	Status *Status
}

// Translator translates snapshots and remembers, per Gateway, what its
// routes add up to, so that the next snapshot costs what
// changed in it: a route that changed is taken back and attached again, the
// others are not looked at twice. Objects in a snapshot must not be changed
// in place (informer caches replace an object when it changes), since the
// state recognises a route by its object.
type Translator struct {
	opts   Options
	states map[types.NamespacedName]*gatewayState
	// prev is the last translation's index, to tell which deps the next
	// snapshot changes.
	prev *env.Index
}

// NewTranslator returns a Translator that has seen nothing yet.
func NewTranslator(opts Options) *Translator {
	return &Translator{opts: opts, states: map[types.NamespacedName]*gatewayState{}}
}

// Translate translates res, with the processors of the other routing APIs
// in precedence order. It never fails: what cannot be translated is
// reported in the status of the object at fault, and the rest is
// translated.
func (tr *Translator) Translate(res *resources.Resources, procs ...Processor) *Result {
	traffic := backendtraffic.Evaluate(res.BackendTrafficPolicies)
	idx := env.NewIndex(res, backendtls.Evaluate(res.BackendTLSPolicies)).WithTraffic(backendtraffic.Evaluated(traffic))
	st := newStatus()
	out := &Result{Status: st}
	tr.acceptClasses(res, st)
	streams := streamRoutes(res)
	httpRoutes := withParents(res.HTTPRoutes, func(r *gatewayv1.HTTPRoute) bool { return mayAttach(&r.Spec.CommonRouteSpec) })
	grpcRoutes := withParents(res.GRPCRoutes, func(r *gatewayv1.GRPCRoute) bool { return mayAttach(&r.Spec.CommonRouteSpec) })
	prev := tr.prev
	if len(tr.states) == 0 {
		prev = nil
	}
	c := engine.NewCache(prev, idx)
	states := map[types.NamespacedName]*gatewayState{}
	for _, gw := range selectGateways(res, idx, tr.opts) {
		name := types.NamespacedName{Namespace: gw.Namespace, Name: gw.Name}
		t := &gatewayTranslator{profile: &defaultProfile, newEnv: idx.Env, endpoints: idx.EndpointSlices, status: st, gw: gw, controller: tr.opts.ControllerName, extensions: tr.opts.Extensions, httpRoutes: httpRoutes, grpcRoutes: grpcRoutes, streams: streams, cache: c, traffic: traffic}
		if tr.opts.Profile != nil {
			if p := tr.opts.Profile(name); p != nil {
				t.profile = p
			}
		}
		out.Gateways = append(out.Gateways, t.translate(res, tr.states[name], procs))
		states[name] = t.state
	}
	// Gateways no longer translated are forgotten.
	tr.states, tr.prev = states, idx
	return out
}

// acceptClasses reports the GatewayClasses with our controllerName as
// accepted, with the features Isobar supports. Offline there are no CRDs
// to ask which fields are served: every one is.
func (tr *Translator) acceptClasses(res *resources.Resources, st *Status) {
	for _, class := range res.GatewayClasses {
		if class.Spec.ControllerName == tr.opts.ControllerName {
			cs := supported.ClassStatus(class, nil, supported.Features)
			st.GatewayClasses[class.Name] = &cs
		}
	}
}

// selectGateways returns the Gateways to translate, ordered by namespace and
// name.
func selectGateways(res *resources.Resources, idx *env.Index, opts Options) []*gatewayv1.Gateway {
	var gws []*gatewayv1.Gateway
	for _, gw := range res.Gateways {
		if len(opts.Gateways) > 0 {
			if slices.Contains(opts.Gateways, types.NamespacedName{Namespace: gw.Namespace, Name: gw.Name}) {
				gws = append(gws, gw)
			}
			continue
		}
		if class, ok := idx.Class(string(gw.Spec.GatewayClassName)); ok && class.Spec.ControllerName == opts.ControllerName {
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
	// profile is the runtimeSettings of the Gateway's profile, never nil.
	profile *v1alpha1.RuntimeSettings
	// newEnv makes the Env a rule reads through, recording in the Reads
	// given; env is one whose reads are not kept, for what is translated
	// again on every translation (listeners, ListenerSets, the context).
	newEnv     func(*env.Reads) env.Env
	env        env.Env
	endpoints  func(types.NamespacedName) []*discoveryv1.EndpointSlice
	status     *Status
	gw         *gatewayv1.Gateway
	controller gatewayv1.GatewayController
	extensions Extensions

	// httpRoutes and grpcRoutes are the snapshot's routes with parentRefs.
	httpRoutes []*gatewayv1.HTTPRoute
	grpcRoutes []*gatewayv1.GRPCRoute
	streams    []*streamRoute // TLS, TCP and UDP routes with parentRefs, oldest first
	cache      *engine.Cache
	// state is what the Gateway's routes add up to; prev is the state of
	// the previous translation when its context was not this one's, whose
	// translated rules cachedRules reuses.
	state, prev *gatewayState

	// sets are the ListenerSets naming the Gateway, in precedence order;
	// listeners are the Gateway's own, then the allowed sets'.
	sets      []*listener.Set
	listeners []*listener.Listener
	lv        *listener.Validation
	// procs are the other routing APIs' processors, in precedence order,
	// and selections what each serves on the Gateway; names are the Envoy
	// names of its listeners when one of them fixes them.
	procs      []GatewayProcessor
	selections []Selection
	names      *Names
	// lost are the listeners where an HTTPRoute or GRPCRoute loses a
	// hostname to a route of the other kind (kindConflicts).
	lost     map[*metav1.ObjectMeta]map[int]string
	clusters map[string]*ir.Cluster
	secrets  map[string]*ir.Secret
	// slots are the listeners as the engine's state knows them.
	slots []engine.Listener
	// backendCert is the Secret Envoy presents to TLS backends (the
	// Gateway's spec.tls.backend), backendCertErr why there is none.
	backendCert    string
	backendCertErr *gatewayProblem
	// traffic are the XBackendTrafficPolicies that apply, by Service.
	traffic map[types.NamespacedName]*backendtraffic.Policy
}

// translate translates the Gateway, starting from its previous state when
// the context is the same.
func (t *gatewayTranslator) translate(res *resources.Resources, prev *gatewayState, procs []Processor) *ir.Gateway {
	t.procs = t.gatewayProcessors(procs)
	t.translateListeners(res)
	t.attachRoutes(res, prev)
	t.buildClusters()
	var svc profileServices
	for _, p := range t.procs {
		if rl := p.RateLimit(); rl != nil {
			svc.rateLimit = rl
		}
	}
	svc.tracing, svc.tracingProblem = t.tracing()
	svc.extAuth, svc.extAuthProblem = t.globalExtAuth()
	t.status.addGatewayRoutes(t.state.Routes())
	g := t.build(svc)
	t.writeGatewayStatus(svc)
	return g
}

// profileServices are the services of the Gateway's profile that every
// connection manager uses, and why each cannot be used (empty when it
// can): what the Gateway's IR carries and its status says.
type profileServices struct {
	rateLimit      *ir.RateLimitService
	tracing        *ir.Tracing
	tracingProblem string
	extAuth        *ir.GlobalExtAuth
	extAuthProblem string
}

// translateListeners validates the Gateway's listeners and those of the
// ListenerSets it takes (the processors' TLS hosts among them), and resolves
// its backend client certificate. They are few and validated afresh on
// every translation, so what they read is not kept.
func (t *gatewayTranslator) translateListeners(res *resources.Resources) {
	var everyTime env.Reads
	t.env = t.newEnv(&everyTime)
	t.clusters = map[string]*ir.Cluster{}
	t.secrets = map[string]*ir.Secret{}
	t.lv = &listener.Validation{Gateway: t.gw, Env: t.env, Secrets: t.secrets}
	t.backendClientCertificate()
	t.sets = t.listenerSets(res)
	t.selections = make([]Selection, len(t.procs))
	for i, p := range t.procs {
		t.selections[i] = p.Select(res)
	}
	// On one TLS host, as on one route match, the object of the API of
	// higher precedence (engine.Source) wins.
	order := make([]int, len(t.procs))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(t.selections[a].Source, t.selections[b].Source) })
	procs, sels := make([]GatewayProcessor, len(order)), make([]Selection, len(order))
	for i, j := range order {
		procs[i], sels[i] = t.procs[j], t.selections[j]
	}
	t.procs, t.selections = procs, sels
	for _, sel := range t.selections {
		t.sets = append(t.sets, sel.Sets...)
		if sel.Names != nil {
			t.names = sel.Names
		}
	}
	t.listeners = t.validation().Listeners(t.sets)
}

// attachRoutes brings the Gateway's state up to date with the snapshot's
// routes of every kind and the processors' routes: attachment to
// listeners, then each route's rules.
// The state of the previous translation is kept when its context (see
// gatewayContext) is this one's; otherwise a new state starts, reusing the
// previous state's translated rules whose reads did not change.
func (t *gatewayTranslator) attachRoutes(res *resources.Resources, prev *gatewayState) {
	t.lost = t.kindConflicts(res)
	ctx := t.context(prev)
	if prev != nil && prev.ctx == ctx {
		t.state = prev
	} else {
		t.state, t.prev = newGatewayState(ctx, len(t.listeners), len(t.httpRoutes)+len(t.grpcRoutes)+len(t.streams)+peerRoutes(t.selections)), prev
	}
	t.slots = make([]engine.Listener, len(t.listeners))
	for i, l := range t.listeners {
		t.slots[i] = slotOf(l)
	}
	t.update()
	for i, l := range t.listeners {
		l.Attached = t.state.Attached()[i]
	}
	t.prev = nil
	for _, p := range t.procs {
		p.Report()
	}
}

// buildClusters builds the clusters the state's routes use, on every
// translation, from this snapshot's endpoints.
func (t *gatewayTranslator) buildClusters() {
	var specs, shared []backend.ClusterSpec
	for spec := range t.state.Clusters() {
		if spec.Shares != nil {
			shared = append(shared, spec)
			continue
		}
		specs = append(specs, spec)
	}
	// After their members.
	specs = append(specs, shared...)
	for _, spec := range specs {
		t.ensureCluster(spec)
	}
	t.reportPolicies(specs)
}

// defaultProfile is the profile of a Gateway that has none.
var defaultProfile v1alpha1.RuntimeSettings

func key(ns, name string) types.NamespacedName {
	return types.NamespacedName{Namespace: ns, Name: name}
}
