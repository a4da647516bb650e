package gatewayapi

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"isobar.dev/controller/pkg/condition"
	"isobar.dev/controller/pkg/envoyrules"
	"isobar.dev/controller/pkg/ir"
	"isobar.dev/controller/pkg/validate"
)

// attachHTTPRoute attaches an HTTPRoute to this Gateway's listeners,
// translates its rules into the route tables and records its status.
func (t *gatewayTranslator) attachHTTPRoute(hr *gatewayv1.HTTPRoute, rank int32) {
	r := route{kind: "HTTPRoute", meta: &hr.ObjectMeta, parentRefs: hr.Spec.ParentRefs, hostnames: hr.Spec.Hostnames}
	t.attachRequestRoute(r, rank, len(hr.Spec.Rules), func(ev *ruleEval) ([][]*ir.Route, ruleProblems) {
		return translateRules("httproute", &hr.ObjectMeta, hr.Spec.Rules,
			func(rule *gatewayv1.HTTPRouteRule) (*gatewayv1.SectionName, []gatewayv1.HTTPRouteMatch) {
				return rule.Name, rule.Matches
			},
			func(rule *gatewayv1.HTTPRouteRule) (*ir.Route, error) { return t.httpAction(hr, rule, ev) },
			httpMatch)
	})
}

// attachRequestRoute attaches an HTTPRoute or GRPCRoute, whose rules become
// HTTP routes in the virtual hosts of its hostnames, records what that
// adds up to as the route's outcome and applies it to the state. rank is
// the route's place among the routes attached with it.
func (t *gatewayTranslator) attachRequestRoute(r route, rank int32, rules int, translate func(ev *ruleEval) ([][]*ir.Route, ruleProblems)) {
	o := t.record(r.kind, r.meta, rank)
	if o == nil {
		return
	}
	defer t.apply(o)
	atts := t.attach(o, r)
	if len(atts) == 0 {
		return
	}
	// The rules are translated whether or not a listener accepts the
	// route: ResolvedRefs reports its references either way.
	routes, problems, resolved := t.cachedRules(o, translate)
	for _, a := range atts {
		if a.conds.IsTrue(gatewayv1.RouteConditionAccepted) {
			problems.report(&a.conds, rules)
		}
		t.countAccepted(o, a)
		if a.conds.IsTrue(gatewayv1.RouteConditionAccepted) {
			for i, l := range a.listeners {
				o.added = append(o.added, addition{listener: slices.Index(t.listeners, l), hosts: a.hosts[i], routes: redirectsFor(l, routes)})
			}
		}
		setResolvedRefs(&a.conds, &resolved)
		o.statuses = append(o.statuses, gatewayv1.RouteParentStatus{
			ParentRef:      a.ref,
			ControllerName: t.controller,
			Conditions:     a.conds.Sorted(),
		})
	}
}

// ruleProblems collects the rules a route cannot serve as written.
type ruleProblems struct {
	invalid map[int]bool
	msgs    []string
	// names are the rules' names, where they have one, for the messages.
	names map[int]string
}

// named records a rule's name, which messages about it then use.
func (p *ruleProblems) named(rule int, name *gatewayv1.SectionName) {
	if name == nil || *name == "" {
		return
	}
	if p.names == nil {
		p.names = map[int]string{}
	}
	p.names[rule] = string(*name)
}

func (p *ruleProblems) add(rule int, err error) {
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

// report sets Accepted false when no rule is valid, else PartiallyInvalid
// when some are not: the valid rules keep working, the invalid ones answer
// 500.
func (p *ruleProblems) report(c *routeConditions, rules int) {
	if len(p.invalid) == 0 {
		return
	}
	msg := condition.JoinMessages(p.msgs)
	if len(p.invalid) == rules {
		c.Items = nil
		c.Set(gatewayv1.RouteConditionAccepted, false, gatewayv1.RouteReasonUnsupportedValue, msg)
		return
	}
	c.Set(gatewayv1.RouteConditionPartiallyInvalid, true, gatewayv1.RouteReasonUnsupportedValue, msg)
}

// translateRules turns each rule and match of an HTTPRoute or GRPCRoute
// (kind, in lower case, names the routes) into IR routes: of returns a
// rule's name and matches (none matches everything), action what the rule
// does, match a match. Problems with references go to the rule's ruleEval
// through action; rules that cannot be served as written are returned as
// problems and answer 500, so that their requests never fall through to a
// less specific route.
func translateRules[Rule, Match any](kind string, meta *metav1.ObjectMeta, rules []Rule,
	of func(*Rule) (*gatewayv1.SectionName, []Match), action func(*Rule) (*ir.Route, error), match func(*Match) (ir.Match, error),
) ([][]*ir.Route, ruleProblems) {
	var problems ruleProblems
	out := make([][]*ir.Route, len(rules))
	for i := range rules {
		rule := &rules[i]
		name, matches := of(rule)
		problems.named(i, name)
		act, err := action(rule)
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
			out[i] = append(out[i], matchRoute(act, j == len(matches)-1, routeName(kind, meta.Namespace, meta.Name, i, name, j), m))
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
func (t *gatewayTranslator) httpAction(hr *gatewayv1.HTTPRoute, rule *gatewayv1.HTTPRouteRule, ev *ruleEval) (*ir.Route, error) {
	r := &ir.Route{}
	for _, f := range rule.Filters {
		if err := applyFilter(r, f); err != nil {
			return failed(ev, err)
		}
	}
	if r.Redirect != nil {
		return r, nil
	}
	for _, f := range rule.Filters {
		if f.Type == gatewayv1.HTTPRouteFilterRequestMirror && f.RequestMirror != nil {
			if err := t.mirror(ev, r, hr.Namespace, "HTTPRoute", f.RequestMirror); err != nil {
				return failed(ev, err)
			}
		}
	}
	if err := timeouts(r, rule.Timeouts, rule.Retry); err != nil {
		return failed(ev, err)
	}
	var buf [4]backendRef
	refs := buf[:0]
	for _, b := range rule.BackendRefs {
		refs = append(refs, backendRef{ref: b.BackendObjectReference, weight: b.Weight, filters: b.Filters})
	}
	r.Destination = t.httpBackends(ev, hr.Namespace, "HTTPRoute", refs)
	if allInvalid(r.Destination) {
		r.Destination = nil
		r.DirectResponse = &ir.DirectResponse{Status: 500}
	}
	return r, nil
}

// failed is the action of a rule that cannot do what it says: it answers
// 500. A reference that cannot be used is reported under ResolvedRefs and
// leaves the rule valid; any other error makes the rule invalid.
func failed(ev *ruleEval, err error) (*ir.Route, error) {
	var p *routeProblem
	if errors.As(err, &p) && p.Type == gatewayv1.RouteConditionResolvedRefs {
		ev.report(p)
		err = nil
	}
	return &ir.Route{DirectResponse: &ir.DirectResponse{Status: 500}}, err
}

func allInvalid(d *ir.Destination) bool {
	for _, b := range d.Backends {
		if !b.Invalid && b.Weight > 0 {
			return false
		}
	}
	return true
}

// applyFilter adds one filter to r.
func applyFilter(r *ir.Route, f gatewayv1.HTTPRouteFilter) error {
	switch f.Type {
	case gatewayv1.HTTPRouteFilterRequestHeaderModifier:
		if f.RequestHeaderModifier == nil {
			return fmt.Errorf("filter RequestHeaderModifier has no requestHeaderModifier")
		}
		h, err := mergeHeaders(r.RequestHeaders, f.RequestHeaderModifier)
		if err != nil {
			return err
		}
		r.RequestHeaders = h
	case gatewayv1.HTTPRouteFilterResponseHeaderModifier:
		if f.ResponseHeaderModifier == nil {
			return fmt.Errorf("filter ResponseHeaderModifier has no responseHeaderModifier")
		}
		h, err := mergeHeaders(r.ResponseHeaders, f.ResponseHeaderModifier)
		if err != nil {
			return err
		}
		r.ResponseHeaders = h
	case gatewayv1.HTTPRouteFilterRequestRedirect:
		if f.RequestRedirect == nil {
			return fmt.Errorf("filter RequestRedirect has no requestRedirect")
		}
		return redirect(r, f.RequestRedirect)
	case gatewayv1.HTTPRouteFilterURLRewrite:
		if f.URLRewrite == nil {
			return fmt.Errorf("filter URLRewrite has no urlRewrite")
		}
		return rewrite(r, f.URLRewrite)
	case gatewayv1.HTTPRouteFilterRequestMirror:
		// Resolved with the backends, by mirror.
		if f.RequestMirror == nil {
			return fmt.Errorf("filter RequestMirror has no requestMirror")
		}
	case gatewayv1.HTTPRouteFilterCORS:
		if f.CORS == nil {
			return fmt.Errorf("filter CORS has no cors")
		}
		return cors(r, f.CORS)
	case gatewayv1.HTTPRouteFilterExtensionRef:
		ref := f.ExtensionRef
		if ref == nil {
			return condition.UnresolvedRef(gatewayv1.RouteReasonInvalidKind, "filter ExtensionRef has no extensionRef")
		}
		return condition.UnresolvedRef(gatewayv1.RouteReasonInvalidKind, fmt.Sprintf("filter ExtensionRef %s/%s %s: Isobar supports no extension filters", ref.Group, ref.Kind, ref.Name))
	default:
		return fmt.Errorf("filter type %s is not supported yet", f.Type)
	}
	return nil
}

// checkModifiable checks a header name a filter sets, adds or removes: a
// token, and one Envoy lets a route modify (not host: it would refuse the
// whole route configuration).
func checkModifiable(name string) error {
	if err := validate.Token(name, "header name"); err != nil {
		return err
	}
	if !envoyrules.Modifiable(name) {
		return fmt.Errorf("header %q cannot be modified by a header filter; to change the host use URLRewrite's hostname", name)
	}
	return nil
}

func mergeHeaders(h *ir.HeaderModifier, f *gatewayv1.HTTPHeaderFilter) (*ir.HeaderModifier, error) {
	if h == nil {
		h = &ir.HeaderModifier{}
	}
	for _, list := range []struct {
		in  []gatewayv1.HTTPHeader
		out *[]ir.Header
	}{{f.Set, &h.Set}, {f.Add, &h.Add}} {
		for _, x := range list.in {
			if err := checkModifiable(string(x.Name)); err != nil {
				return nil, err
			}
			if err := validate.Value(x.Value, "header", string(x.Name), "value"); err != nil {
				return nil, err
			}
			*list.out = append(*list.out, ir.Header{Name: string(x.Name), Value: x.Value})
		}
	}
	for _, name := range f.Remove {
		if err := checkModifiable(name); err != nil {
			return nil, err
		}
	}
	h.Remove = append(h.Remove, f.Remove...)
	return h, nil
}

func redirect(r *ir.Route, f *gatewayv1.HTTPRequestRedirectFilter) error {
	if r.Rewrite != nil {
		return fmt.Errorf("a rule cannot have both RequestRedirect and URLRewrite")
	}
	rd := &ir.Redirect{StatusCode: 302}
	if f.StatusCode != nil {
		rd.StatusCode = *f.StatusCode
		switch rd.StatusCode {
		case 301, 302, 303, 307, 308:
		default:
			return fmt.Errorf("redirect status code %d is not one of 301, 302, 303, 307 and 308", rd.StatusCode)
		}
	}
	if f.Scheme != nil {
		rd.Scheme = *f.Scheme
		if rd.Scheme != "http" && rd.Scheme != "https" {
			return fmt.Errorf("redirect scheme %q is not http or https", rd.Scheme)
		}
	}
	if f.Hostname != nil {
		rd.Hostname = string(*f.Hostname)
		if err := validate.Hostname(rd.Hostname, false); err != nil {
			return fmt.Errorf("redirect: %w", err)
		}
	}
	if f.Port != nil {
		if *f.Port < 1 || *f.Port > 65535 {
			return fmt.Errorf("redirect port %d is outside 1-65535", *f.Port)
		}
		rd.Port = uint32(*f.Port)
	}
	if f.Path != nil {
		rd.HasPath = true
		switch f.Path.Type {
		case gatewayv1.FullPathHTTPPathModifier:
			rd.FullPath = deref(f.Path.ReplaceFullPath)
		case gatewayv1.PrefixMatchHTTPPathModifier:
			rd.PrefixPath = deref(f.Path.ReplacePrefixMatch)
		default:
			return fmt.Errorf("redirect path type %q is not supported", f.Path.Type)
		}
		if err := checkReplacement("redirect", rd.FullPath+rd.PrefixPath); err != nil {
			return err
		}
	}
	r.Redirect = rd
	return nil
}

func rewrite(r *ir.Route, f *gatewayv1.HTTPURLRewriteFilter) error {
	if r.Redirect != nil {
		return fmt.Errorf("a rule cannot have both RequestRedirect and URLRewrite")
	}
	rw := &ir.Rewrite{}
	if f.Hostname != nil {
		rw.Hostname = string(*f.Hostname)
		if err := validate.Hostname(rw.Hostname, false); err != nil {
			return fmt.Errorf("rewrite: %w", err)
		}
	}
	if f.Path != nil {
		rw.HasPath = true
		switch f.Path.Type {
		case gatewayv1.FullPathHTTPPathModifier:
			rw.FullPath = deref(f.Path.ReplaceFullPath)
		case gatewayv1.PrefixMatchHTTPPathModifier:
			rw.PrefixPath = deref(f.Path.ReplacePrefixMatch)
		default:
			return fmt.Errorf("rewrite path type %q is not supported", f.Path.Type)
		}
		if err := checkReplacement("rewrite", rw.FullPath+rw.PrefixPath); err != nil {
			return err
		}
	}
	r.Rewrite = rw
	return nil
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

// httpMatch translates a match, checking what the API server's schema
// cannot: regular expressions must compile (RE2, as Envoy's).
func httpMatch(m *gatewayv1.HTTPRouteMatch) (ir.Match, error) {
	out := ir.Match{PathType: ir.PathPrefix, Path: "/"}
	if m.Path != nil {
		if m.Path.Value != nil {
			out.Path = *m.Path.Value
		}
		if m.Path.Type != nil {
			switch *m.Path.Type {
			case gatewayv1.PathMatchExact:
				out.PathType = ir.PathExact
			case gatewayv1.PathMatchPathPrefix:
				out.PathType = ir.PathPrefix
			case gatewayv1.PathMatchRegularExpression:
				out.PathType = ir.PathRegex
				if err := validate.Regex("path regular expression", out.Path); err != nil {
					return out, err
				}
			default:
				return out, fmt.Errorf("path match type %q is not supported", *m.Path.Type)
			}
		}
		if out.PathType != ir.PathRegex {
			if err := validate.Path("path", out.Path); err != nil {
				return out, err
			}
		}
	}
	if m.Method != nil {
		out.Method = string(*m.Method)
		if !methods[out.Method] {
			return out, fmt.Errorf("method %q is not an HTTP method", out.Method)
		}
	}
	for _, h := range m.Headers {
		sm, err := stringMatch("header", string(h.Name), h.Value, h.Type != nil && *h.Type == gatewayv1.HeaderMatchRegularExpression)
		if err != nil {
			return out, err
		}
		sm.Name = strings.ToLower(sm.Name)
		out.Headers = append(out.Headers, sm)
	}
	for _, q := range m.QueryParams {
		sm, err := stringMatch("query parameter", string(q.Name), q.Value, q.Type != nil && *q.Type == gatewayv1.QueryParamMatchRegularExpression)
		if err != nil {
			return out, err
		}
		out.QueryParams = append(out.QueryParams, sm)
	}
	return out, nil
}

func stringMatch(what, name, value string, regex bool) (ir.StringMatch, error) {
	sm := ir.StringMatch{Name: name, Value: value, Regex: regex}
	if err := validate.Token(name, what, "name"); err != nil {
		return sm, err
	}
	if regex {
		return sm, validate.Regex(what+" "+name+" regular expression", value)
	}
	return sm, validate.Value(value, what, name, "value")
}

// checkReplacement checks a replacement path; empty means "/".
func checkReplacement(what, p string) error {
	if p == "" {
		return nil
	}
	return validate.Path(what+" path", p)
}

// routeName names an Envoy route after the rule and match it came from,
// "<kind>/<namespace>/<name>/rule/<i>[:<rule name>]/match/<j>" (a rule
// name has neither ":" nor "/"); built by hand because it runs for every
// match of every route.
func routeName(kind, namespace, name string, rule int, ruleName *gatewayv1.SectionName, match int) string {
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

// methods are the HTTP methods a match or CORS policy may name.
var methods = map[string]bool{
	"GET": true, "HEAD": true, "POST": true, "PUT": true, "DELETE": true,
	"CONNECT": true, "OPTIONS": true, "TRACE": true, "PATCH": true,
}
