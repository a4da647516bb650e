// Package routerule translates the rules of HTTPRoutes and GRPCRoutes into
// IR routes, and the backendRefs of every route kind into the clusters they
// use. Each entry point is a function of an env.Env and the route object
// that returns a plain value: the package has no state, no Kubernetes
// client, and no way to read the snapshot except through the Env, which
// records every read for the engine (a read that is not recorded cannot be
// written here; see TestRulesReadOnlyThroughEnv).
package routerule

import (
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"isobar.dev/controller/pkg/condition"
	"isobar.dev/controller/pkg/env"
	"isobar.dev/controller/pkg/ir"
)

// Rules are a route's translated rules and what translating them found.
type Rules struct {
	// Routes are the IR routes of each rule, one per match.
	Routes [][]*ir.Route
	// Problems are the rules that cannot be served as written.
	Problems Problems
	// Resolved holds the ResolvedRefs problem of the route's references,
	// if any: the rules that make them keep working.
	Resolved condition.Route
	// Clusters are the clusters the rules' backends use.
	Clusters []ClusterSpec
}

// eval is what evaluating a route's rules (or a stream route's backends)
// found besides the routes: its ResolvedRefs problems and the clusters it
// uses.
type eval struct {
	env      env.Env
	names    *Names
	resolved condition.Route
	clusters []ClusterSpec
}

func newEval(e env.Env, names *Names, generation int64) *eval {
	return &eval{env: e, names: names, resolved: condition.Route{Generation: generation}}
}

// report records a problem with one of the rules' references.
func (e *eval) report(p *condition.RouteProblem) { e.resolved.Report(p) }

// cluster records a cluster the rules use.
func (e *eval) cluster(s ClusterSpec) { e.clusters = append(e.clusters, s) }

// HTTPRoute translates an HTTPRoute's rules, naming clusters from names.
func HTTPRoute(e env.Env, names *Names, hr *gatewayv1.HTTPRoute) *Rules {
	ev := newEval(e, names, hr.Generation)
	routes, problems := translateRules("httproute", hr.Namespace, hr.Name, hr.Spec.Rules,
		func(rule *gatewayv1.HTTPRouteRule) (*gatewayv1.SectionName, []gatewayv1.HTTPRouteMatch) {
			return rule.Name, rule.Matches
		},
		func(i int, rule *gatewayv1.HTTPRouteRule) (*ir.Route, error) { return httpAction(ev, hr, i, rule) },
		httpMatch)
	return &Rules{Routes: routes, Problems: problems, Resolved: ev.resolved, Clusters: ev.clusters}
}

// GRPCRoute translates a GRPCRoute's rules. gRPC is HTTP/2 with the method
// in the path ("/package.Service/Method"), so its rules become HTTP routes
// on the same virtual hosts as HTTPRoutes, to clusters that speak HTTP/2.
func GRPCRoute(e env.Env, names *Names, gr *gatewayv1.GRPCRoute) *Rules {
	ev := newEval(e, names, gr.Generation)
	routes, problems := translateRules("grpcroute", gr.Namespace, gr.Name, gr.Spec.Rules,
		func(rule *gatewayv1.GRPCRouteRule) (*gatewayv1.SectionName, []gatewayv1.GRPCRouteMatch) {
			return rule.Name, rule.Matches
		},
		func(i int, rule *gatewayv1.GRPCRouteRule) (*ir.Route, error) { return grpcAction(ev, gr, i, rule) },
		grpcMatch)
	return &Rules{Routes: routes, Problems: problems, Resolved: ev.resolved, Clusters: ev.clusters}
}

// HTTPBackends resolves the weighted backendRefs of a rule of a route of
// kind in namespace ns into a destination: a ref that does not resolve
// keeps its weight, marked invalid, so that its share of requests gets a
// 500; Resolved says why.
func HTTPBackends(e env.Env, names *Names, kind, ns string, generation int64, refs []Backend) Backends {
	ev := eval{env: e, names: names, resolved: condition.Route{Generation: generation}}
	var buf [4]backendRef
	brs := buf[:0]
	for _, b := range refs {
		brs = append(brs, backendRef{ref: b.BackendObjectReference, weight: b.Weight, filters: b.Filters, upstream: b.Upstream,
			requestHeaders: b.RequestHeaders, responseHeaders: b.ResponseHeaders, cookieRewrites: b.CookieRewrites, hostname: b.Hostname})
	}
	d := httpBackends(&ev, ns, kind, brs)
	return Backends{Destination: d, Resolved: ev.resolved, Clusters: ev.clusters}
}

// Backends are a route's resolved backends.
type Backends struct {
	Destination *ir.Destination
	// Resolved holds the ResolvedRefs problem of the backendRefs, if any.
	Resolved condition.Route
	Clusters []ClusterSpec
}

// StreamBackends resolves the backendRefs of a TLS, TCP or UDP route of
// kind in namespace ns, at generation. A connection cannot be answered
// with an error the way a request can, so invalid backends are left out;
// with none left the destination is empty and Envoy refuses the
// connections.
func StreamBackends(e env.Env, names *Names, kind, ns string, generation int64, refs []gatewayv1.BackendRef, up Upstream) *Backends {
	ev := newEval(e, names, generation)
	d := &ir.Destination{}
	for _, ref := range refs {
		weight := weightOf(ref.Weight)
		name, ok := resolveBackend(ev, "", ns, kind, ref.BackendObjectReference, up)
		if !ok {
			continue
		}
		if weight > 0 {
			d.Backends = append(d.Backends, ir.WeightedCluster{Cluster: name, Weight: weight})
		}
	}
	return &Backends{Destination: d, Resolved: ev.resolved, Clusters: ev.clusters}
}
