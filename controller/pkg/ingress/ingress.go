// Package ingress serves networking.k8s.io/v1 Ingresses on a Gateway's
// fleet, as Contour's design for multiple listeners lets a Gateway do:
// a Gateway whose first listener is ingress-http (HTTP), and whose second,
// if any, is ingress-https (HTTPS), also serves the Ingresses of the
// IngressClasses whose parameters name it.
//
// It is pure: it turns each Ingress into what the Gateway API translator
// already knows how to serve, HTTPRoutes on those listeners and, for the
// hosts of spec.tls, HTTPS listeners on ingress-https's port carrying the
// Ingress's certificates. An Ingress's rules rank after every HTTPRoute's
// with the same match: the translator knows its routes by their names
// (RoutePrefix).
package ingress

import (
	"fmt"
	"slices"
	"strings"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
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

// Annotations Isobar reads on an Ingress or IngressClass.
const (
	// ForceSSLRedirect "true" redirects HTTP requests for the Ingress's
	// TLS hosts to HTTPS.
	ForceSSLRedirect = "ingress.kubernetes.io/force-ssl-redirect"
)

// ParentGroup and ParentKind are what the HTTPRoutes of an Ingress's TLS
// hosts name as their parent: the Ingress, whose listeners they are.
const (
	ParentGroup gatewayv1.Group = networkingv1.GroupName
	ParentKind  gatewayv1.Kind  = "Ingress"
)

// RoutePrefix starts the name of every HTTPRoute made of an Ingress: a name
// no real object can have (":" is not allowed in names), so that what the
// translator reports about it goes back to the Ingress.
const RoutePrefix = "ingress:"

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

// Converted is an Ingress as the translator serves it.
type Converted struct {
	Ingress *networkingv1.Ingress
	// Listeners are the HTTPS listeners of its TLS hosts, on
	// ingress-https's port; HTTPRoutes reach them through a parentRef to
	// the Ingress (ParentGroup, ParentKind).
	Listeners []gatewayv1.ListenerEntry
	Routes    []*gatewayv1.HTTPRoute
	// Problems are what cannot be served as written, for the Ingress's
	// Events (an Ingress has no conditions).
	Problems []string
}

// ServicePort returns the number of a Service's named port.
type ServicePort func(namespace, service, port string) (int32, bool)

// Convert turns an Ingress into listeners and HTTPRoutes for a Gateway of
// the given shape.
func Convert(ing *networkingv1.Ingress, gw *gatewayv1.Gateway, shape Shape, ports ServicePort) Converted {
	c := Converted{Ingress: ing}
	tlsHosts := map[string]string{} // host -> its listener's name
	for i, t := range ing.Spec.TLS {
		if shape.HTTPS == nil {
			c.Problems = append(c.Problems, fmt.Sprintf("spec.tls[%d]: Gateway %s/%s has no %s listener to serve TLS on", i, gw.Namespace, gw.Name, HTTPSListener))
			break
		}
		if len(t.Hosts) == 0 {
			c.Problems = append(c.Problems, fmt.Sprintf("spec.tls[%d] names no hosts; Isobar serves an Ingress's TLS for the hosts it names (the Gateway's %s certificate serves the others)", i, HTTPSListener))
			continue
		}
		for _, h := range t.Hosts {
			if _, dup := tlsHosts[h]; dup {
				c.Problems = append(c.Problems, fmt.Sprintf("spec.tls[%d]: host %s has a certificate already; the first one is used", i, h))
				continue
			}
			name := gatewayv1.SectionName(fmt.Sprintf("tls-%d", len(c.Listeners)))
			tlsHosts[h] = string(name)
			host := gatewayv1.Hostname(h)
			c.Listeners = append(c.Listeners, gatewayv1.ListenerEntry{
				Name: name, Hostname: &host, Port: shape.HTTPS.Port, Protocol: gatewayv1.HTTPSProtocolType,
				TLS:           &gatewayv1.ListenerTLSConfig{CertificateRefs: []gatewayv1.SecretObjectReference{{Name: gatewayv1.ObjectName(t.SecretName)}}},
				AllowedRoutes: &gatewayv1.AllowedRoutes{Kinds: []gatewayv1.RouteGroupKind{{Kind: "HTTPRoute"}}},
			})
		}
	}
	redirect := ing.Annotations[ForceSSLRedirect] == "true"
	if redirect && shape.HTTPS == nil {
		c.Problems = append(c.Problems, fmt.Sprintf("%s: Gateway %s/%s has no %s listener to redirect to", ForceSSLRedirect, gw.Namespace, gw.Name, HTTPSListener))
		redirect = false
	}

	var fallback *gatewayv1.HTTPRouteRule
	if b := ing.Spec.DefaultBackend; b != nil {
		ref, problem := backendRef(ing, b, ports)
		if problem != "" {
			c.Problems = append(c.Problems, "spec.defaultBackend: "+problem)
		}
		fallback = rule(gatewayv1.PathMatchPathPrefix, "/", ref)
	}
	// Rules of one host become one HTTPRoute, hosts in order of first
	// appearance.
	var hosts []string
	rules := map[string][]gatewayv1.HTTPRouteRule{}
	for i, r := range ing.Spec.Rules {
		if _, seen := rules[r.Host]; !seen {
			hosts = append(hosts, r.Host)
			rules[r.Host] = nil
		}
		if r.HTTP == nil {
			continue
		}
		for j, p := range r.HTTP.Paths {
			typ := gatewayv1.PathMatchPathPrefix
			if p.PathType != nil && *p.PathType == networkingv1.PathTypeExact {
				typ = gatewayv1.PathMatchExact
			}
			ref, problem := backendRef(ing, &p.Backend, ports)
			if problem != "" {
				c.Problems = append(c.Problems, fmt.Sprintf("spec.rules[%d].http.paths[%d]: %s", i, j, problem))
			}
			path := p.Path
			if path == "" {
				path = "/"
			}
			rules[r.Host] = append(rules[r.Host], *rule(typ, path, ref))
		}
	}
	if fallback != nil && !slices.Contains(hosts, "") {
		hosts = append(hosts, "")
	}
	for i, h := range hosts {
		rs := rules[h]
		if fallback != nil {
			rs = append(rs, *fallback)
		}
		if len(rs) == 0 {
			continue
		}
		r := route(ing, i, h, rs)
		listener, tls := tlsHosts[h]
		if redirect && tls {
			// The HTTP side of a TLS host redirects; its rules are served
			// over HTTPS only.
			rd := route(ing, i, h, []gatewayv1.HTTPRouteRule{{Filters: []gatewayv1.HTTPRouteFilter{{
				Type: gatewayv1.HTTPRouteFilterRequestRedirect,
				RequestRedirect: &gatewayv1.HTTPRequestRedirectFilter{
					Scheme: ptr("https"), Port: ptr(shape.HTTPS.Port), StatusCode: ptr(301),
				},
			}}}})
			rd.Name += ":redirect"
			rd.Spec.ParentRefs = []gatewayv1.ParentReference{gatewayRef(gw, HTTPListener)}
			c.Routes = append(c.Routes, rd)
		} else {
			r.Spec.ParentRefs = append(r.Spec.ParentRefs, gatewayRef(gw, HTTPListener))
		}
		if tls {
			r.Spec.ParentRefs = append(r.Spec.ParentRefs, gatewayv1.ParentReference{
				Group: ptr(ParentGroup), Kind: ptr(ParentKind), Namespace: ptr(gatewayv1.Namespace(ing.Namespace)),
				Name: gatewayv1.ObjectName(ing.Name), SectionName: ptr(gatewayv1.SectionName(listener)),
			})
		}
		if len(r.Spec.ParentRefs) > 0 {
			c.Routes = append(c.Routes, r)
		}
	}
	return c
}

// backendRef is an Ingress backend as an HTTPRoute's: a Service port by
// number, or by name through the Service. What cannot be resolved still
// becomes a backendRef, which the translator answers 500 for, as it does
// for an HTTPRoute's.
func backendRef(ing *networkingv1.Ingress, b *networkingv1.IngressBackend, ports ServicePort) (gatewayv1.HTTPBackendRef, string) {
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
		n, ok := ports(ing.Namespace, b.Service.Name, b.Service.Port.Name)
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

func rule(typ gatewayv1.PathMatchType, path string, ref gatewayv1.HTTPBackendRef) *gatewayv1.HTTPRouteRule {
	return &gatewayv1.HTTPRouteRule{
		Matches:     []gatewayv1.HTTPRouteMatch{{Path: &gatewayv1.HTTPPathMatch{Type: ptr(typ), Value: ptr(path)}}},
		BackendRefs: []gatewayv1.HTTPBackendRef{ref},
	}
}

// route is the HTTPRoute of an Ingress's i-th host.
func route(ing *networkingv1.Ingress, i int, host string, rules []gatewayv1.HTTPRouteRule) *gatewayv1.HTTPRoute {
	r := &gatewayv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{
		Namespace: ing.Namespace, Name: fmt.Sprintf("%s%s:%d", RoutePrefix, ing.Name, i),
		UID: types.UID(fmt.Sprintf("%s/%d", ing.UID, i)), Generation: ing.Generation,
		CreationTimestamp: ing.CreationTimestamp,
	}}
	if host != "" {
		r.Spec.Hostnames = []gatewayv1.Hostname{gatewayv1.Hostname(host)}
	}
	r.Spec.Rules = rules
	return r
}

func gatewayRef(gw *gatewayv1.Gateway, section gatewayv1.SectionName) gatewayv1.ParentReference {
	return gatewayv1.ParentReference{Namespace: ptr(gatewayv1.Namespace(gw.Namespace)), Name: gatewayv1.ObjectName(gw.Name), SectionName: ptr(section)}
}

// Of returns the Ingress an HTTPRoute made by Convert comes from, by its
// namespace and name.
func Of(routeNamespace, routeName string) (types.NamespacedName, bool) {
	rest, ok := strings.CutPrefix(routeName, RoutePrefix)
	if !ok {
		return types.NamespacedName{}, false
	}
	name, _, _ := strings.Cut(rest, ":")
	return types.NamespacedName{Namespace: routeNamespace, Name: name}, true
}

func ptr[T any](v T) *T { return &v }
