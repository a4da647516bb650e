// Package routerule translates the rules of HTTPRoutes and GRPCRoutes into
// IR routes; package backend resolves the backends they name. Each entry
// point is a function of an env.Env and the route object
// that returns a plain value: the package has no state, no Kubernetes
// client, and no way to read the snapshot except through the Env, which
// records every read for the engine (a read that is not recorded cannot be
// written here; see TestRulesReadOnlyThroughEnv).
package routerule

import (
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"isobar.dev/controller/pkg/backend"
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
	// Unresolved is the ResolvedRefs problem of the route's references,
	// if any: the rules that make them keep working.
	Unresolved *condition.RouteProblem
	// Clusters are the clusters the rules' backends use.
	Clusters []backend.ClusterSpec
}

// HTTPRoute translates an HTTPRoute's rules, naming clusters from names.
func HTTPRoute(e env.Env, names *backend.Names, hr *gatewayv1.HTTPRoute) *Rules {
	ev := backend.NewResolver(e, names)
	routes, problems := translateRules("httproute", hr.Namespace, hr.Name, hr.Spec.Rules,
		func(rule *gatewayv1.HTTPRouteRule) (*gatewayv1.SectionName, []gatewayv1.HTTPRouteMatch) {
			return rule.Name, rule.Matches
		},
		func(i int, rule *gatewayv1.HTTPRouteRule) (*ir.Route, error) { return httpAction(ev, hr, i, rule) },
		httpMatch)
	return &Rules{Routes: routes, Problems: problems, Unresolved: ev.Unresolved, Clusters: ev.Clusters}
}

// GRPCRoute translates a GRPCRoute's rules. gRPC is HTTP/2 with the method
// in the path ("/package.Service/Method"), so its rules become HTTP routes
// on the same virtual hosts as HTTPRoutes, to clusters that speak HTTP/2.
func GRPCRoute(e env.Env, names *backend.Names, gr *gatewayv1.GRPCRoute) *Rules {
	ev := backend.NewResolver(e, names)
	routes, problems := translateRules("grpcroute", gr.Namespace, gr.Name, gr.Spec.Rules,
		func(rule *gatewayv1.GRPCRouteRule) (*gatewayv1.SectionName, []gatewayv1.GRPCRouteMatch) {
			return rule.Name, rule.Matches
		},
		func(i int, rule *gatewayv1.GRPCRouteRule) (*ir.Route, error) { return grpcAction(ev, gr, i, rule) },
		grpcMatch)
	return &Rules{Routes: routes, Problems: problems, Unresolved: ev.Unresolved, Clusters: ev.Clusters}
}
