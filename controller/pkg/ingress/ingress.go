// Package ingress serves networking.k8s.io/v1 Ingresses on a Gateway's
// fleet, as Contour's design for multiple listeners lets a Gateway do:
// a Gateway whose first listener is ingress-http (HTTP), and whose second,
// if any, is ingress-https (HTTPS), also serves the Ingresses of the
// IngressClasses whose parameters name it.
//
// It is a processor beside the Gateway API's: pure, reading the snapshot
// only through an env.Env. For the hosts of spec.tls it gives the HTTPS
// listeners, on ingress-https's port, that carry the Ingress's
// certificates (Listeners); for its rules, the IR routes of each host
// (Translate), which the engine adds to the virtual hosts of ingress-http
// and of those listeners. Where an Ingress's route and a Gateway API
// route have the same match on one host, the engine ranks the Gateway
// API's first.
package ingress

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	networkingv1 "k8s.io/api/networking/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"isobar.dev/api/refgrant"
	"isobar.dev/controller/pkg/backend"
	"isobar.dev/controller/pkg/env"
	"isobar.dev/controller/pkg/hostname"
	"isobar.dev/controller/pkg/ir"
	"isobar.dev/controller/pkg/routerule"
	"isobar.dev/controller/pkg/validate"
)

// Listener names a Gateway that serves Ingress has. The design names them
// ingress_http and ingress_https, which the Gateway API's listener names
// (DNS labels) cannot be; Envoy's listeners keep the design's names.
const (
	HTTPListener  gatewayv1.SectionName = "ingress-http"
	HTTPSListener gatewayv1.SectionName = "ingress-https"
	// EnvoyHTTP and EnvoyHTTPS name the Envoy listeners of those ports,
	// and EnvoyHTTP the HTTP port's RouteConfiguration.
	EnvoyHTTP  = "ingress_http"
	EnvoyHTTPS = "ingress_https"
)

// ParentGroup and ParentKind name the owner of the listeners of an
// Ingress's TLS hosts: the Ingress.
const (
	ParentGroup gatewayv1.Group = networkingv1.GroupName
	ParentKind  gatewayv1.Kind  = "Ingress"
)

// Shape is how a Gateway serves Ingress.
type Shape struct {
	HTTP  *gatewayv1.Listener
	HTTPS *gatewayv1.Listener // nil when the Gateway has one listener
}

// ShapeOf checks a Gateway against the design's shape: one or two
// listeners, the first ingress-http with protocol HTTP, the second
// ingress-https with protocol HTTPS (its certificate serves TLS clients
// whose SNI names no Ingress TLS host; the design's HTTP there cannot carry
// the TLS the Gateway API asks of a listener on which TLS terminates).
func ShapeOf(gw *gatewayv1.Gateway) (Shape, error) {
	ls := gw.Spec.Listeners
	var s Shape
	switch {
	case len(ls) == 0 || len(ls) > 2:
		return s, fmt.Errorf("Gateway %s/%s has %d listeners; to serve Ingress it needs %s (HTTP) and optionally %s (HTTPS), and no others", gw.Namespace, gw.Name, len(ls), HTTPListener, HTTPSListener)
	case ls[0].Name != HTTPListener || ls[0].Protocol != gatewayv1.HTTPProtocolType:
		return s, fmt.Errorf("Gateway %s/%s's first listener is %q (%s); to serve Ingress it must be %s with protocol HTTP", gw.Namespace, gw.Name, ls[0].Name, ls[0].Protocol, HTTPListener)
	case len(ls) == 2 && (ls[1].Name != HTTPSListener || ls[1].Protocol != gatewayv1.HTTPSProtocolType):
		return s, fmt.Errorf("Gateway %s/%s's second listener is %q (%s); to serve Ingress it must be %s with protocol HTTPS", gw.Namespace, gw.Name, ls[1].Name, ls[1].Protocol, HTTPSListener)
	}
	s.HTTP = &ls[0]
	if len(ls) == 2 {
		s.HTTPS = &ls[1]
	}
	return s, nil
}

// Listeners are the HTTPS listeners of an Ingress's TLS hosts on
// ingress-https's port, each with its certificate, and what cannot be
// served as written, for the Ingress's Events.
func Listeners(ing *networkingv1.Ingress, gw *gatewayv1.Gateway, shape Shape) ([]gatewayv1.ListenerEntry, []string) {
	var out []gatewayv1.ListenerEntry
	_, _, problems, ok := TLSVersions(ing)
	if !ok {
		return nil, problems
	}
	seen := map[string]bool{}
	for i, t := range ing.Spec.TLS {
		if shape.HTTPS == nil {
			problems = append(problems, fmt.Sprintf("spec.tls[%d]: Gateway %s/%s has no %s listener to serve TLS on", i, gw.Namespace, gw.Name, HTTPSListener))
			break
		}
		if len(t.Hosts) == 0 {
			problems = append(problems, fmt.Sprintf("spec.tls[%d] names no hosts; Isobar serves an Ingress's TLS for the hosts it names (the Gateway's %s certificate serves the others)", i, HTTPSListener))
			continue
		}
		for _, h := range t.Hosts {
			if seen[h] {
				problems = append(problems, fmt.Sprintf("spec.tls[%d]: host %s has a certificate already; the first one is used", i, h))
				continue
			}
			seen[h] = true
			host := gatewayv1.Hostname(h)
			ns, name := refgrant.IngressSecret(ing, t.SecretName)
			cert := gatewayv1.SecretObjectReference{Namespace: ptr(gatewayv1.Namespace(ns)), Name: gatewayv1.ObjectName(name)}
			out = append(out, gatewayv1.ListenerEntry{
				Name: gatewayv1.SectionName(fmt.Sprintf("tls-%d", len(out))), Hostname: &host, Port: shape.HTTPS.Port, Protocol: gatewayv1.HTTPSProtocolType,
				TLS: &gatewayv1.ListenerTLSConfig{CertificateRefs: []gatewayv1.SecretObjectReference{cert}},
			})
		}
	}
	return out, problems
}

// Rules are an Ingress's rules as IR routes, by host.
type Rules struct {
	Hosts []Host
	// Clusters are the clusters the routes use.
	Clusters []backend.ClusterSpec
	// Problems are what cannot be served as written, for the Ingress's
	// Events (an Ingress has no conditions).
	Problems []string
}

// Host is what an Ingress serves for one host.
type Host struct {
	// Name is the host, "" for every host.
	Name string
	// Routes are the host's paths in order, then the default backend.
	Routes []*ir.Route
	// TLS says the host is one of spec.tls's: its routes are served on its
	// HTTPS listener too.
	TLS bool
	// Redirect, when set, is what the host gets on ingress-http instead of
	// its routes (force-ssl-redirect of a TLS host).
	Redirect *ir.Route
	// HTTP says the host's routes are served on ingress-http too, unless
	// Redirect takes their place there (no allow-http "false").
	HTTP bool
}

// pathMatch is how Contour matches an Ingress path of a path type: Exact
// as written; Prefix by path segments, a trailing slash aside ("/" is
// every path); ImplementationSpecific, and no type, as a regular
// expression when the path holds one of ^+*[]% and as a string prefix
// otherwise ("/foo" matches "/foobar").
func pathMatch(path string, typ *networkingv1.PathType) (ir.Match, string) {
	switch t := ptrOr(typ, networkingv1.PathTypeImplementationSpecific); t {
	case networkingv1.PathTypeExact:
		return ir.Match{PathType: ir.PathExact, Path: path}, ""
	case networkingv1.PathTypePrefix:
		return ir.Match{PathType: ir.PathPrefix, Path: cmp.Or(strings.TrimRight(path, "/"), "/")}, ""
	case networkingv1.PathTypeImplementationSpecific:
		if strings.ContainsAny(path, "^+*[]%") {
			if err := validate.Regex("path", path); err != nil {
				return ir.Match{}, fmt.Sprintf("read as a regular expression (it holds one of ^+*[]%%): %v; the path is not served", err)
			}
			return ir.Match{PathType: ir.PathRegex, Path: path}, ""
		}
		return ir.Match{PathType: ir.PathStringPrefix, Path: path}, ""
	default:
		return ir.Match{}, fmt.Sprintf("pathType %q is not Exact, Prefix or ImplementationSpecific; the path is not served", t)
	}
}

// Defaults are the header changes every backend of an Ingress gets (the
// profile's httpproxy.policy with applyToIngress), for a backend Service
// and port: its requests', its responses', and the host its requests
// get ("" to keep theirs).
type Defaults func(service string, port int) (req, resp *ir.HeaderModifier, host string, err error)

// Translate turns an Ingress's rules into IR routes for a Gateway of the
// given shape, reading Services through e and naming clusters from names;
// defaults, when set, change every backend's headers.
func Translate(e env.Env, names *backend.Names, ing *networkingv1.Ingress, gw *gatewayv1.Gateway, shape Shape, defaults Defaults) Rules {
	var out Rules
	tlsHosts := map[string]bool{}
	if shape.HTTPS != nil {
		for _, t := range ing.Spec.TLS {
			for _, h := range t.Hosts {
				tlsHosts[h] = true
			}
		}
	}
	pol := policyOf(ing)
	out.Problems = append(out.Problems, pol.problems...)
	redirect := pol.redirect
	if redirect && shape.HTTPS == nil {
		out.Problems = append(out.Problems, fmt.Sprintf("%s: Gateway %s/%s has no %s listener to redirect to", ForceSSLRedirect, gw.Namespace, gw.Name, HTTPSListener))
		redirect = false
	}
	// A backend is resolved once per reference in the spec, so that each
	// reports its own problem.
	backend := func(where string, b *networkingv1.IngressBackend) *ir.Route {
		ref, problem := backendRef(e, ing, b)
		be := backend.Ref{HTTPBackendRef: ref}
		if defaults != nil && b.Service != nil {
			req, resp, host, err := defaults(b.Service.Name, int(b.Service.Port.Number))
			if err != nil {
				out.Problems = append(out.Problems, where+": the Gateway's profile: "+err.Error())
			} else {
				be.RequestHeaders, be.ResponseHeaders, be.Hostname = req, resp, host
			}
		}
		bs := backend.ForHTTP(e, names, "Ingress", ing.Namespace, []backend.Ref{be})
		out.Clusters = append(out.Clusters, bs.Clusters...)
		if problem != "" {
			out.Problems = append(out.Problems, where+": "+problem)
		} else if c := bs.Unresolved; c != nil {
			out.Problems = append(out.Problems, where+": "+c.Message)
		}
		r := &ir.Route{Destination: bs.Destination}
		if backend.AllInvalid(r.Destination) {
			r.Destination, r.DirectResponse = nil, &ir.DirectResponse{Status: 500}
		}
		return r
	}
	var fallback *ir.Route
	if b := ing.Spec.DefaultBackend; b != nil {
		fallback = backend("spec.defaultBackend", b)
		fallback.Match = ir.Match{PathType: ir.PathPrefix, Path: "/"}
		pol.apply(fallback, "/")
	}
	// Rules of one host are one Host, hosts in order of first appearance.
	var hosts []string
	routes := map[string][]*ir.Route{}
	for i, r := range ing.Spec.Rules {
		if _, seen := routes[r.Host]; !seen {
			hosts = append(hosts, r.Host)
			routes[r.Host] = nil
		}
		if r.Host != "" {
			if err := validate.Hostname(r.Host, true); err != nil {
				out.Problems = append(out.Problems, fmt.Sprintf("spec.rules[%d]: %v", i, err))
				continue
			}
		}
		if r.HTTP == nil {
			continue
		}
		for j, p := range r.HTTP.Paths {
			where := fmt.Sprintf("spec.rules[%d].http.paths[%d]", i, j)
			path := cmp.Or(p.Path, "/")
			m, problem := pathMatch(path, p.PathType)
			if problem != "" {
				out.Problems = append(out.Problems, where+": "+problem)
				continue
			}
			route := backend(where, &p.Backend)
			route.Match = m
			pol.apply(route, path)
			routes[r.Host] = append(routes[r.Host], route)
		}
	}
	if fallback != nil && !slices.Contains(hosts, "") {
		hosts = append(hosts, "")
	}
	for i, h := range hosts {
		rs := routes[h]
		if fallback != nil {
			f := *fallback
			rs = append(rs, &f)
		}
		if len(rs) == 0 {
			continue
		}
		for j, r := range rs {
			r.Name = routerule.RouteName("ingress", ing.Namespace, ing.Name, i, nil, j)
			if strings.HasPrefix(h, "*.") {
				// A wildcard host serves one label in front of its
				// domain, as Contour's does.
				r.Match.Headers = slices.Concat(r.Match.Headers, []ir.StringMatch{{Name: ":authority", Value: hostname.OneLabelAuthority(h), Regex: true}})
			}
		}
		host := Host{Name: h, Routes: rs, TLS: tlsHosts[h], HTTP: pol.httpAllowed}
		if redirect && host.TLS {
			// The HTTP side of a TLS host redirects; its rules are served
			// over HTTPS only.
			host.Redirect = &ir.Route{
				Name:     routerule.RouteName("ingress", ing.Namespace, ing.Name, i, ptr[gatewayv1.SectionName]("redirect"), 0),
				Match:    ir.Match{PathType: ir.PathPrefix, Path: "/"},
				Redirect: &ir.Redirect{Scheme: "https", Port: uint32(shape.HTTPS.Port), StatusCode: 301},
			}
		}
		out.Hosts = append(out.Hosts, host)
	}
	return out
}

// backendRef is an Ingress backend as a Gateway API backendRef: a Service
// port by number, or by name through the Service. What cannot be resolved
// still becomes a ref, which answers 500 as an HTTPRoute's does.
func backendRef(e env.Env, ing *networkingv1.Ingress, b *networkingv1.IngressBackend) (gatewayv1.HTTPBackendRef, string) {
	ref := gatewayv1.HTTPBackendRef{BackendRef: gatewayv1.BackendRef{Weight: ptr(int32(1))}}
	if b.Resource != nil {
		group := ""
		if b.Resource.APIGroup != nil {
			group = *b.Resource.APIGroup
		}
		ref.Group, ref.Kind, ref.Name = ptr(gatewayv1.Group(group)), ptr(gatewayv1.Kind(b.Resource.Kind)), gatewayv1.ObjectName(b.Resource.Name)
		return ref, fmt.Sprintf("resource backend %s %s is not supported; use a Service", b.Resource.Kind, b.Resource.Name)
	}
	if b.Service == nil {
		return ref, "backend names no Service"
	}
	ref.Name = gatewayv1.ObjectName(b.Service.Name)
	port := b.Service.Port.Number
	if b.Service.Port.Name != "" {
		n, ok := e.ServicePort(ing.Namespace, b.Service.Name, b.Service.Port.Name)
		if !ok {
			return ref, fmt.Sprintf("Service %s/%s has no port named %q", ing.Namespace, b.Service.Name, b.Service.Port.Name)
		}
		port = n
	}
	if port != 0 {
		ref.Port = ptr(gatewayv1.PortNumber(port))
	}
	return ref, ""
}

func ptr[T any](v T) *T { return &v }

func ptrOr[T any](p *T, v T) T {
	if p == nil {
		return v
	}
	return *p
}
