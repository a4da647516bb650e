package routerule

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"isobar.dev/controller/pkg/backend"
	"isobar.dev/controller/pkg/ir"
	"isobar.dev/controller/pkg/validate"
)

// authPathPattern is the path an HTTP authorization server's checks go
// under, as the CRD allows it.
var authPathPattern = regexp.MustCompile(`^(?:[-A-Za-z0-9/._~!$&'()*+,;=:@]|[%][0-9a-fA-F]{2})+$`)

// externalAuth is a rule's ExternalAuth filter (GEP-1494): the server
// Envoy asks about each of the rule's requests first. A server that does
// not resolve is reported under ResolvedRefs, and the rule answers 500:
// its requests are never let through unchecked. allowedHeaders are the
// headers a check carries: for a gRPC server those alone (every header
// without a list), for an HTTP server those besides host, method, path,
// content-length and authorization, as both Envoy and the Gateway API
// have it.
func externalAuth(ev *backend.Resolver, namespace string, f *gatewayv1.HTTPExternalAuthFilter) (*ir.ExtAuth, bool, error) {
	if f == nil {
		return nil, false, errors.New("filter ExternalAuth has no externalAuth")
	}
	out := &ir.ExtAuth{}
	switch f.ExternalAuthProtocol {
	case gatewayv1.HTTPRouteExternalAuthHTTPProtocol:
		if f.GRPCAuthConfig != nil {
			return nil, false, errors.New("filter ExternalAuth: grpc is set for protocol HTTP")
		}
		if c := f.HTTPAuthConfig; c != nil {
			if c.Path != "" {
				if !authPathPattern.MatchString(c.Path) || strings.Contains(c.Path, "//") {
					return nil, false, fmt.Errorf("filter ExternalAuth: http.path %q is not a path", c.Path)
				}
				out.PathPrefix = "/" + strings.Trim(c.Path, "/")
			}
			var err error
			if out.AllowedHeaders, err = allowedHeaders("http.allowedHeaders", c.AllowedRequestHeaders); err != nil {
				return nil, false, err
			}
			if out.UpstreamHeaders, err = headerNames("http.allowedResponseHeaders", c.AllowedResponseHeaders); err != nil {
				return nil, false, err
			}
		}
	case gatewayv1.HTTPRouteExternalAuthGRPCProtocol:
		out.GRPC = true
		if f.HTTPAuthConfig != nil {
			return nil, false, errors.New("filter ExternalAuth: http is set for protocol GRPC")
		}
		if c := f.GRPCAuthConfig; c != nil {
			var err error
			if out.AllowedHeaders, err = allowedHeaders("grpc.allowedHeaders", c.AllowedRequestHeaders); err != nil {
				return nil, false, err
			}
		}
	default:
		return nil, false, fmt.Errorf("filter ExternalAuth: protocol %q is not HTTP or GRPC", f.ExternalAuthProtocol)
	}
	if f.ForwardBody != nil {
		out.MaxBody = uint32(f.ForwardBody.MaxSize)
	}
	cluster, ok := ev.ResolveAs("externalAuth: ", namespace, "HTTPRoute", f.BackendRef, backend.Upstream{}, out.GRPC)
	if !ok {
		return nil, false, nil
	}
	ns := namespace
	if f.BackendRef.Namespace != nil {
		ns = string(*f.BackendRef.Namespace)
	}
	out.Cluster, out.Authority = cluster, fmt.Sprintf("%s.%s:%d", f.BackendRef.Name, ns, *f.BackendRef.Port)
	return out, true, nil
}

// allowedHeaders are a list of allowed request headers as the filter
// takes them: sorted, without duplicates, nil for an empty list (Envoy's
// default, as the Gateway API's).
func allowedHeaders(what string, names []string) ([]string, error) {
	out, err := headerNames(what, names)
	if err != nil || len(out) == 0 {
		return nil, err
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// headerNames are header names as Envoy matches them: tokens, in lower
// case.
func headerNames(what string, names []string) ([]string, error) {
	var out []string
	for _, n := range names {
		if err := validate.Token(n, "filter ExternalAuth: "+what); err != nil {
			return nil, err
		}
		out = append(out, strings.ToLower(n))
	}
	return out, nil
}
