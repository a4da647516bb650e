package gatewayapi

import (
	"fmt"
	"regexp"

	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"isobar.dev/controller/pkg/ir"
	"isobar.dev/controller/pkg/validate"
)

// attachGRPCRoute attaches a GRPCRoute. gRPC is HTTP/2 with the method in
// the path ("/package.Service/Method"), so its rules become HTTP routes on
// the same virtual hosts as HTTPRoutes, to clusters that speak HTTP/2.
func (t *gatewayTranslator) attachGRPCRoute(gr *gatewayv1.GRPCRoute, rank int32) {
	r := route{kind: "GRPCRoute", meta: &gr.ObjectMeta, parentRefs: gr.Spec.ParentRefs, hostnames: gr.Spec.Hostnames}
	t.attachRequestRoute(r, rank, len(gr.Spec.Rules), func(ev *ruleEval) ([][]*ir.Route, ruleProblems) {
		return translateRules("grpcroute", &gr.ObjectMeta, gr.Spec.Rules,
			func(rule *gatewayv1.GRPCRouteRule) (*gatewayv1.SectionName, []gatewayv1.GRPCRouteMatch) {
				return rule.Name, rule.Matches
			},
			func(rule *gatewayv1.GRPCRouteRule) (*ir.Route, error) { return t.grpcAction(gr, rule, ev) },
			grpcMatch)
	})
}

func (t *gatewayTranslator) grpcAction(gr *gatewayv1.GRPCRoute, rule *gatewayv1.GRPCRouteRule, ev *ruleEval) (*ir.Route, error) {
	r := &ir.Route{}
	for _, f := range rule.Filters {
		if err := applyFilter(r, httpFilter(f)); err != nil {
			return failed(ev, err)
		}
	}
	for _, f := range rule.Filters {
		if f.Type == gatewayv1.GRPCRouteFilterRequestMirror && f.RequestMirror != nil {
			if err := t.mirror(ev, r, gr.Namespace, "GRPCRoute", f.RequestMirror); err != nil {
				return failed(ev, err)
			}
		}
	}
	refs := make([]backendRef, len(rule.BackendRefs))
	for i, b := range rule.BackendRefs {
		refs[i] = backendRef{ref: b.BackendObjectReference, weight: b.Weight, filters: httpFilters(b.Filters)}
	}
	r.Destination = t.httpBackends(ev, gr.Namespace, "GRPCRoute", refs)
	if allInvalid(r.Destination) {
		r.Destination = nil
		r.DirectResponse = &ir.DirectResponse{Status: 500}
	}
	return r, nil
}

// grpcName is a gRPC service or method name as the schema allows them.
var grpcName = regexp.MustCompile(`^[A-Za-z_][A-Za-z_0-9]*(\.[A-Za-z_][A-Za-z_0-9]*)*$`)

// grpcMatch turns a service and method match into a path match: both given
// is the exact path; a service alone, every method of it; a method alone, that
// method of any service. Regular expressions match the same segments.
func grpcMatch(m *gatewayv1.GRPCRouteMatch) (ir.Match, error) {
	out := ir.Match{PathType: ir.PathPrefix, Path: "/"}
	if mm := m.Method; mm != nil {
		service, method := deref(mm.Service), deref(mm.Method)
		regex := mm.Type != nil && *mm.Type == gatewayv1.GRPCMethodMatchRegularExpression
		switch {
		case regex:
			for _, part := range []string{service, method} {
				if part != "" {
					if err := validate.Regex("gRPC method regular expression", part); err != nil {
						return out, err
					}
				}
			}
			out.PathType, out.Path = ir.PathRegex, "/"+orAny(service)+"/"+orAny(method)
		default:
			for what, part := range map[string]string{"service": service, "method": method} {
				if part != "" && !grpcName.MatchString(part) {
					return out, fmt.Errorf("gRPC %s %q is not a valid name", what, part)
				}
			}
			switch {
			case service != "" && method != "":
				out.PathType, out.Path = ir.PathExact, "/"+service+"/"+method
			case service != "":
				out.Path = "/" + service
			case method != "":
				out.PathType, out.Path = ir.PathRegex, "/[^/]+/"+regexp.QuoteMeta(method)
			}
		}
	}
	for _, h := range m.Headers {
		sm, err := stringMatch("header", string(h.Name), h.Value, h.Type != nil && *h.Type == gatewayv1.GRPCHeaderMatchRegularExpression)
		if err != nil {
			return out, err
		}
		out.Headers = append(out.Headers, sm)
	}
	return out, nil
}

func orAny(re string) string {
	if re == "" {
		return "[^/]+"
	}
	return "(?:" + re + ")"
}

// httpFilter is a GRPCRoute filter as the HTTPRoute filter of the same type:
// the types they share have the same fields and meaning.
func httpFilter(f gatewayv1.GRPCRouteFilter) gatewayv1.HTTPRouteFilter {
	return gatewayv1.HTTPRouteFilter{
		Type:                   gatewayv1.HTTPRouteFilterType(f.Type),
		RequestHeaderModifier:  f.RequestHeaderModifier,
		ResponseHeaderModifier: f.ResponseHeaderModifier,
		RequestMirror:          f.RequestMirror,
		ExtensionRef:           f.ExtensionRef,
	}
}

func httpFilters(fs []gatewayv1.GRPCRouteFilter) []gatewayv1.HTTPRouteFilter {
	out := make([]gatewayv1.HTTPRouteFilter, len(fs))
	for i, f := range fs {
		out[i] = httpFilter(f)
	}
	return out
}
