package httpproxy

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"

	contourv1 "github.com/projectcontour/contour/apis/projectcontour/v1"
	corev1 "k8s.io/api/core/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"isobar.dev/controller/pkg/backend"
	"isobar.dev/controller/pkg/ir"
)

// services resolves route i's services into out's destination; cluster
// holds what the route asks of its services' clusters (their idle
// connection timeout, load balancer and health check).
func (w *walk) services(p *contourv1.HTTPProxy, i int, r *contourv1.Route, out *ir.Route, cluster backend.Upstream) *problem {
	// Services without weights share the requests equally; with weights,
	// a service of weight 0 gets none.
	weighted := slices.ContainsFunc(r.Services, func(s contourv1.Service) bool { return s.Weight > 0 && !s.Mirror })
	var buf [4]backend.Ref
	refs := buf[:0]
	host := ""
	if out.Rewrite != nil {
		host = out.Rewrite.Hostname
	}
	routeCookies, bad := cookieRewrites(r.CookieRewritePolicies, "route")
	if bad != nil {
		return bad
	}
	var mirrored *contourv1.Service
	mirroredAt := 0
	for j := range r.Services {
		s := &r.Services[j]
		if f := refuseService(s); f != "" {
			return refused(contourv1.ConditionTypeServiceError, "NotSupported", fmt.Sprintf("routes[%d].services[%d].%s is not supported yet", i, j, f))
		}
		if s.Port < 1 || s.Port > 65535 {
			return refused(contourv1.ConditionTypeServiceError, "ServicePortInvalid", fmt.Sprintf("service %q: port must be in the range 1-65535", s.Name))
		}
		if s.Mirror {
			if mirrored != nil {
				return refused(contourv1.ConditionTypeServiceError, "OnlyOneMirror", "only one service per route may be nominated as mirror")
			}
			if s.RequestHeadersPolicy != nil || s.ResponseHeadersPolicy != nil || len(s.CookieRewritePolicies) > 0 {
				// Envoy sends a mirror the request as the route forwards
				// it, and drops its answer.
				w.status(p).Valid.AddWarningf(contourv1.ConditionTypeServiceError, "MirrorHeadersPolicy",
					"routes[%d].services[%d]: the headers and cookie rewrite policies of a mirror service take no effect", i, j)
			}
			mirrored, mirroredAt = s, j
			continue
		}
		reqHeaders, respHeaders, serviceHost, bad := serviceHeaders(p, s, i, j, w.opts.Policy)
		if bad != nil {
			return bad
		}
		cookies, bad := cookieRewrites(s.CookieRewritePolicies, "service")
		if bad != nil {
			return bad
		}
		// A service's Host is its requests' server name too, before the
		// route's, as Contour has it.
		up, bad := w.upstream(p, i, j, s, cmp.Or(serviceHost, host))
		if bad != nil {
			return bad
		}
		up.IdleConnection, up.LoadBalancer, up.HealthCheck = cluster.IdleConnection, cluster.LoadBalancer, cluster.HealthCheck
		if up.SlowStart, bad = slowStart(s.SlowStartPolicy, cluster.LoadBalancer); bad != nil {
			return bad
		}
		if up.HealthPort, bad = w.healthPort(p, "Spec.Routes", fmt.Sprintf("routes[%d].services[%d]", i, j), s, cluster.HealthCheck != nil); bad != nil {
			return bad
		}
		weight := int32(1)
		if weighted {
			weight = int32(min(s.Weight, 1000000))
		}
		refs = append(refs, backend.Ref{HTTPBackendRef: gatewayv1.HTTPBackendRef{BackendRef: gatewayv1.BackendRef{
			BackendObjectReference: gatewayv1.BackendObjectReference{Name: gatewayv1.ObjectName(s.Name), Port: ptr(gatewayv1.PortNumber(s.Port))},
			Weight:                 &weight,
		}}, Upstream: up, RequestHeaders: reqHeaders, ResponseHeaders: respHeaders, CookieRewrites: mergeCookieRewrites(routeCookies, cookies), Hostname: serviceHost})
	}
	out.Destination = w.backends(p, refs)
	if mirrored != nil {
		up, bad := w.upstream(p, i, mirroredAt, mirrored, host)
		if bad != nil {
			return bad
		}
		up.IdleConnection, up.LoadBalancer, up.HealthCheck = cluster.IdleConnection, cluster.LoadBalancer, cluster.HealthCheck
		ref := backend.Ref{HTTPBackendRef: gatewayv1.HTTPBackendRef{BackendRef: gatewayv1.BackendRef{BackendObjectReference: gatewayv1.BackendObjectReference{
			Name: gatewayv1.ObjectName(mirrored.Name), Port: ptr(gatewayv1.PortNumber(mirrored.Port)),
		}}}, Upstream: up}
		if m := w.backends(p, []backend.Ref{ref}); !backend.AllInvalid(m) {
			out.Mirrors = []ir.Mirror{mirror(m, mirrored.Weight)}
		}
	}
	switch {
	case backend.AllInvalid(out.Destination):
		// No service to send to: Envoy's answer is 503.
		out.Destination, out.DirectResponse = nil, &ir.DirectResponse{Status: 503}
	default:
		// A service that does not resolve is left out, as Contour leaves
		// it: the others take all the requests (the status names it).
		out.Destination.Backends = slices.DeleteFunc(slices.Clone(out.Destination.Backends), func(b ir.WeightedCluster) bool { return b.Invalid })
	}
	return nil
}

// warn adds a warning about route i of proxy p to its status.
func (w *walk) warn(p *contourv1.HTTPProxy, i int, reason, message string) {
	w.status(p).Valid.AddWarningf(contourv1.ConditionTypeRouteError, reason, "routes[%d]: %s", i, message)
}

// backends resolves the backendRefs written for proxy p, with the
// clusters they need; a reference that does not resolve is an error on
// p's status, and its share of requests is answered as the Gateway API
// answers it.
func (w *walk) backends(p *contourv1.HTTPProxy, refs []backend.Ref) *ir.Destination {
	b := backend.ForHTTP(w.e, w.names, "HTTPProxy", p.Namespace, refs)
	w.tree.Clusters = append(w.tree.Clusters, b.Clusters...)
	if c := b.Unresolved; c != nil {
		w.status(p).Valid.AddErrorf(contourv1.ConditionTypeServiceError, "ServiceUnresolvedReference", "Spec.Routes unresolved service reference: %s", c.Message)
	}
	return b.Destination
}

func ptr[T any](v T) *T { return &v }

// healthPort is the Service port a service's health checks go to, as
// Contour has it: a port of the Service (ServiceUnresolvedReference
// otherwise), on each endpoint at the port its EndpointSlices give that
// Service port. Without a health check it has nothing to do, and the
// proxy says so.
// spec names the part of p the service is in, for an error as Contour
// words it, and at the service, for the warning.
func (w *walk) healthPort(p *contourv1.HTTPProxy, spec, at string, s *contourv1.Service, checked bool) (int32, *problem) {
	if s.HealthPort == 0 || s.HealthPort == int(s.Port) {
		return 0, nil
	}
	if s.HealthPort < 1 || s.HealthPort > 65535 {
		return 0, refused(contourv1.ConditionTypeServiceError, "ServicePortInvalid", fmt.Sprintf("service %q: healthPort must be in the range 1-65535", s.Name))
	}
	svc, ok := w.e.Service(p.Namespace, s.Name)
	if ok && !slices.ContainsFunc(svc.Spec.Ports, func(sp corev1.ServicePort) bool { return sp.Port == int32(s.HealthPort) }) {
		return 0, refused(contourv1.ConditionTypeServiceError, "ServiceUnresolvedReference",
			fmt.Sprintf("%s unresolved service reference: port %q on service %q not matched", spec, strconv.Itoa(s.HealthPort), p.Namespace+"/"+s.Name))
	}
	if !checked {
		w.status(p).Valid.AddWarningf(contourv1.ConditionTypeServiceError, "PolicyHasNoEffect",
			"%s: healthPort takes effect only with a healthCheckPolicy", at)
		return 0, nil
	}
	return int32(s.HealthPort), nil
}
