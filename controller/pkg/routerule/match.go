package routerule

import (
	"fmt"
	"regexp"
	"strings"

	"k8s.io/utils/ptr"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"isobar.dev/controller/pkg/ir"
	"isobar.dev/controller/pkg/validate"
)

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

// methods are the HTTP methods a match or CORS policy may name.
var methods = map[string]bool{
	"GET": true, "HEAD": true, "POST": true, "PUT": true, "DELETE": true,
	"CONNECT": true, "OPTIONS": true, "TRACE": true, "PATCH": true,
}

// grpcName is a gRPC service or method name as the schema allows them.
var grpcName = regexp.MustCompile(`^[A-Za-z_][A-Za-z_0-9]*(\.[A-Za-z_][A-Za-z_0-9]*)*$`)

// grpcMatch turns a service and method match into a path match: both given
// is the exact path; a service alone, every method of it; a method alone, that
// method of any service. Regular expressions match the same segments.
func grpcMatch(m *gatewayv1.GRPCRouteMatch) (ir.Match, error) {
	out := ir.Match{PathType: ir.PathPrefix, Path: "/"}
	if mm := m.Method; mm != nil {
		service, method := ptr.Deref(mm.Service, ""), ptr.Deref(mm.Method, "")
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
