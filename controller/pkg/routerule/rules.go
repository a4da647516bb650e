package routerule

import (
	"errors"
	"fmt"
	"strconv"

	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"isobar.dev/controller/pkg/backend"
	"isobar.dev/controller/pkg/condition"
	"isobar.dev/controller/pkg/ir"
)

// Problems collects the rules a route cannot serve as written.
type Problems struct {
	rules   int // how many the route has
	invalid map[int]bool
	msgs    []string
	// names are the rules' names, where they have one, for the messages.
	names map[int]string
}

// named records a rule's name, which messages about it then use.
func (p *Problems) named(rule int, name *gatewayv1.SectionName) {
	if name == nil || *name == "" {
		return
	}
	if p.names == nil {
		p.names = map[int]string{}
	}
	p.names[rule] = string(*name)
}

func (p *Problems) add(rule int, err error) {
	if p.invalid == nil {
		p.invalid = map[int]bool{}
	}
	p.invalid[rule] = true
	if name, ok := p.names[rule]; ok {
		p.msgs = append(p.msgs, fmt.Sprintf("rule %d (%s): %v", rule, name, err))
		return
	}
	p.msgs = append(p.msgs, fmt.Sprintf("rule %d: %v", rule, err))
}

// Report sets Accepted false when no rule is valid, else PartiallyInvalid
// when some are not: the valid rules keep working, the invalid ones answer
// 500.
func (p *Problems) Report(c *condition.Route) {
	if len(p.invalid) == 0 {
		return
	}
	msg := condition.JoinMessages(p.msgs)
	if len(p.invalid) == p.rules {
		c.Items = nil
		c.Set(gatewayv1.RouteConditionAccepted, false, gatewayv1.RouteReasonUnsupportedValue, msg)
		return
	}
	c.Set(gatewayv1.RouteConditionPartiallyInvalid, true, gatewayv1.RouteReasonUnsupportedValue, msg)
}

// translateRules turns each rule and match of an HTTPRoute or GRPCRoute
// (kind, in lower case, names the routes) into IR routes: of returns a
// rule's name and matches (none matches everything), action what the rule
// does, match a match. Problems with references go to the rule's eval
// through action; rules that cannot be served as written are returned as
// problems and answer 500, so that their requests never fall through to a
// less specific route.
func translateRules[Rule, Match any](kind, namespace, name string, rules []Rule,
	of func(*Rule) (*gatewayv1.SectionName, []Match), action func(int, *Rule) (*ir.Route, error), match func(*Match) (ir.Match, error),
) ([][]*ir.Route, Problems) {
	problems := Problems{rules: len(rules)}
	out := make([][]*ir.Route, len(rules))
	for i := range rules {
		rule := &rules[i]
		ruleName, matches := of(rule)
		problems.named(i, ruleName)
		act, err := action(i, rule)
		if err != nil {
			problems.add(i, err)
		}
		if len(matches) == 0 {
			matches = make([]Match, 1)
		}
		for j := range matches {
			m, err := match(&matches[j])
			if err != nil {
				problems.add(i, fmt.Errorf("match %d: %w", j, err))
				continue
			}
			out[i] = append(out[i], matchRoute(act, j == len(matches)-1, RouteName(kind, namespace, name, i, ruleName, j), m))
		}
	}
	return out, problems
}

// matchRoute is the IR route of one match of a rule: the rule's action
// with the match's name and match. The last match takes the action itself,
// so that a rule of one match allocates one route.
func matchRoute(action *ir.Route, last bool, name string, m ir.Match) *ir.Route {
	r := action
	if !last {
		c := *action
		r = &c
	}
	r.Name, r.Match = name, m
	return r
}

// httpAction is what a rule does, shared by its matches, and why it cannot
// do what the rule says, if it cannot.
func httpAction(ev *backend.Resolver, hr *gatewayv1.HTTPRoute, i int, rule *gatewayv1.HTTPRouteRule) (*ir.Route, error) {
	r := &ir.Route{}
	if rule.SessionPersistence != nil {
		s, err := session(rule.SessionPersistence, "httproute", hr.Namespace, hr.Name, i, len(rule.BackendRefs))
		if err != nil {
			return failed(ev, err)
		}
		r.Session = s
	}
	for _, f := range rule.Filters {
		if err := applyFilter(r, f); err != nil {
			return failed(ev, err)
		}
	}
	authorized := true
	for _, f := range rule.Filters {
		if f.Type != gatewayv1.HTTPRouteFilterExternalAuth {
			continue
		}
		if r.ExtAuth != nil {
			return failed(ev, errors.New("a rule may have one ExternalAuth filter"))
		}
		var err error
		if r.ExtAuth, authorized, err = externalAuth(ev, hr.Namespace, f.ExternalAuth); err != nil {
			return failed(ev, err)
		}
	}
	if !authorized {
		// Without its authorization server, the rule lets nothing in.
		return &ir.Route{DirectResponse: &ir.DirectResponse{Status: 500}}, nil
	}
	if r.Redirect != nil {
		return r, nil
	}
	for _, f := range rule.Filters {
		if f.Type == gatewayv1.HTTPRouteFilterRequestMirror && f.RequestMirror != nil {
			if err := mirror(ev, r, hr.Namespace, "HTTPRoute", f.RequestMirror); err != nil {
				return failed(ev, err)
			}
		}
	}
	if err := timeouts(r, rule.Timeouts, rule.Retry); err != nil {
		return failed(ev, err)
	}
	var buf [4]backend.Ref
	refs := buf[:0]
	for _, b := range rule.BackendRefs {
		refs = append(refs, backend.Ref{HTTPBackendRef: b})
	}
	r.Destination = ev.Weighted(hr.Namespace, "HTTPRoute", refs, backendFilters)
	if backend.AllInvalid(r.Destination) {
		r.Destination = nil
		r.DirectResponse = &ir.DirectResponse{Status: 500}
		return r, nil
	}
	if r.Session != nil {
		if err := splitSession(ev, "httproute", hr.Namespace, hr.Name, i, r.Destination); err != nil {
			return failed(ev, err)
		}
	}
	if rule.SessionPersistence == nil && len(rule.BackendRefs) == 1 {
		var err error
		if r.Session, err = policySession(ev, "httproute", hr.Namespace, hr.Name, i, &rule.BackendRefs[0].BackendObjectReference); err != nil {
			return failed(ev, err)
		}
	}
	return r, nil
}

// failed is the action of a rule that cannot do what it says: it answers
// 500. A reference that cannot be used is reported under ResolvedRefs and
// leaves the rule valid; any other error makes the rule invalid.
func failed(ev *backend.Resolver, err error) (*ir.Route, error) {
	var p *condition.RouteProblem
	if errors.As(err, &p) && p.Type == gatewayv1.RouteConditionResolvedRefs {
		ev.Report(p)
		err = nil
	}
	return &ir.Route{DirectResponse: &ir.DirectResponse{Status: 500}}, err
}

// RouteName names an Envoy route after the rule and match it came from,
// "<kind>/<namespace>/<name>/rule/<i>[:<rule name>]/match/<j>" (kind in
// lower case; a rule name has neither ":" nor "/"), which explain reads
// back. Built by hand because it runs for every match of every route.
func RouteName(kind, namespace, name string, rule int, ruleName *gatewayv1.SectionName, match int) string {
	var buf [256]byte
	b := append(buf[:0], kind...)
	b = append(b, '/')
	b = append(b, namespace...)
	b = append(b, '/')
	b = append(b, name...)
	b = append(b, "/rule/"...)
	b = strconv.AppendInt(b, int64(rule), 10)
	if ruleName != nil && *ruleName != "" {
		b = append(b, ':')
		b = append(b, *ruleName...)
	}
	b = append(b, "/match/"...)
	b = strconv.AppendInt(b, int64(match), 10)
	return string(b)
}

func grpcAction(ev *backend.Resolver, gr *gatewayv1.GRPCRoute, i int, rule *gatewayv1.GRPCRouteRule) (*ir.Route, error) {
	r := &ir.Route{}
	if rule.SessionPersistence != nil {
		s, err := session(rule.SessionPersistence, "grpcroute", gr.Namespace, gr.Name, i, len(rule.BackendRefs))
		if err != nil {
			return failed(ev, err)
		}
		r.Session = s
	}
	for _, f := range rule.Filters {
		if err := applyFilter(r, httpFilter(f)); err != nil {
			return failed(ev, err)
		}
	}
	for _, f := range rule.Filters {
		if f.Type == gatewayv1.GRPCRouteFilterRequestMirror && f.RequestMirror != nil {
			if err := mirror(ev, r, gr.Namespace, "GRPCRoute", f.RequestMirror); err != nil {
				return failed(ev, err)
			}
		}
	}
	refs := make([]backend.Ref, len(rule.BackendRefs))
	for i, b := range rule.BackendRefs {
		refs[i] = backend.Ref{HTTPBackendRef: gatewayv1.HTTPBackendRef{BackendRef: b.BackendRef, Filters: httpFilters(b.Filters)}}
	}
	r.Destination = ev.Weighted(gr.Namespace, "GRPCRoute", refs, backendFilters)
	if backend.AllInvalid(r.Destination) {
		r.Destination = nil
		r.DirectResponse = &ir.DirectResponse{Status: 500}
		return r, nil
	}
	if r.Session != nil {
		if err := splitSession(ev, "grpcroute", gr.Namespace, gr.Name, i, r.Destination); err != nil {
			return failed(ev, err)
		}
	}
	if rule.SessionPersistence == nil && len(rule.BackendRefs) == 1 {
		var err error
		if r.Session, err = policySession(ev, "grpcroute", gr.Namespace, gr.Name, i, &rule.BackendRefs[0].BackendObjectReference); err != nil {
			return failed(ev, err)
		}
	}
	return r, nil
}
