// Package ingresses is the processor of Ingress: which Ingresses a
// Gateway serves (those of its IngressClasses, on its Ingress listeners),
// their rules on the Gateway's listeners, and what is reported on each
// (its load balancer status and, as Events, its problems).
package ingresses

import (
	"fmt"
	"slices"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"isobar.dev/api/ingressclass"
	"isobar.dev/controller/pkg/engine"
	"isobar.dev/controller/pkg/gatewayapi"
	"isobar.dev/controller/pkg/hostname"
	"isobar.dev/controller/pkg/httpproxy"
	"isobar.dev/controller/pkg/ingress"
	"isobar.dev/controller/pkg/ir"
	"isobar.dev/controller/pkg/listener"
	"isobar.dev/controller/pkg/resources"
)

// Status is what the controller serving a Gateway reports on an Ingress
// it serves: the load balancer status comes from the Gateway's addresses,
// and Problems become Events (an Ingress has no conditions).
type Status struct {
	Gateway types.NamespacedName
	// Served says the Gateway has the listeners Ingress needs, so that
	// the Ingress gets the Gateway's addresses.
	Served   bool
	Problems []string
}

// Processor translates the Ingresses of one translation, for every
// Gateway, and holds what to report on those served.
type Processor map[types.NamespacedName]*Status

// ForGateway starts the processor's work on one Gateway.
func (p Processor) ForGateway(g *gatewayapi.Gateway) gatewayapi.GatewayProcessor {
	return &gateway{g: g, out: p}
}

// EnvoyNames are the Envoy names of a Gateway's listeners when it has the
// listeners Ingress needs (ingress-http, and ingress-https): those of
// Contour's design for multiple listeners.
func EnvoyNames() *gatewayapi.Names {
	return &gatewayapi.Names{
		HTTP:  engine.Names{Listener: ingress.EnvoyHTTP},
		HTTPS: engine.Names{Listener: ingress.EnvoyHTTPS, Routes: "https"},
	}
}

// gateway is the processor's work on one Gateway.
type gateway struct {
	g   *gatewayapi.Gateway
	out map[types.NamespacedName]*Status
	// shape is the Gateway's Ingress listeners, and ingresses the
	// Ingresses it serves.
	shape     ingress.Shape
	ingresses []*networkingv1.Ingress
	byMeta    map[*metav1.ObjectMeta]*networkingv1.Ingress
}

// Select finds the Ingresses the Gateway serves and the listeners of
// their TLS hosts, a set per Ingress.
func (t *gateway) Select(res *resources.Resources) gatewayapi.Selection {
	sel := gatewayapi.Selection{Kind: ingress.ParentKind, Source: engine.FromIngress}
	gw := t.g.Object()
	selected := ingressclass.Selected(gw, t.g.Controller(), res.IngressClasses, res.Ingresses)
	if len(selected) == 0 {
		return sel
	}
	gwName := t.g.Key()
	shape, err := ingress.ShapeOf(gw)
	if err != nil {
		for _, ing := range selected {
			t.out[key(ing.Namespace, ing.Name)] = &Status{Gateway: gwName, Problems: []string{err.Error()}}
		}
		return sel
	}
	t.shape, sel.Names = shape, EnvoyNames()
	t.byMeta = make(map[*metav1.ObjectMeta]*networkingv1.Ingress, len(selected))
	for _, ing := range selected {
		entries, problems := ingress.Listeners(ing, gw, shape)
		t.out[key(ing.Namespace, ing.Name)] = &Status{Gateway: gwName, Served: true, Problems: problems}
		t.ingresses = append(t.ingresses, ing)
		t.byMeta[&ing.ObjectMeta] = ing
		sel.Routes = append(sel.Routes, &ing.ObjectMeta)
		if len(entries) > 0 {
			sel.Sets = append(sel.Sets, &listener.Set{
				Meta: &ing.ObjectMeta, Entries: entries,
				Group: string(ingress.ParentGroup), Kind: string(ingress.ParentKind),
				Grant: "TLSCertificateDelegation or ReferenceGrant", Noun: "TLS host",
				ChainTLS: func() *ir.ChainTLS { return ingress.ChainTLS(ing) },
			})
		}
	}
	return sel
}

// detail is what an Ingress's outcome keeps beside the engine's: the
// problems attaching it found, for its Events.
type detail struct {
	problems []string
}

// Attach adds an Ingress's routes to the virtual hosts of ingress-http
// (the Gateway's first listener) and of its TLS hosts' listeners, as its
// outcome.
func (t *gateway) Attach(o *gatewayapi.Outcome, meta *metav1.ObjectMeta) {
	ing := t.byMeta[meta]
	// ingress-http's allowedRoutes say which namespaces' Ingresses it
	// serves, as for HTTPRoutes; the TLS hosts' listeners are the
	// Ingress's own.
	http := t.g.Listeners()[0]
	if msg := t.g.Allows(o, http, &ing.ObjectMeta); msg != "" {
		o.Detail = &detail{problems: []string{msg}}
		return
	}
	var defaults ingress.Defaults
	if pol := t.g.Profile().HTTPProxyOrDefault().Policy; pol != nil && pol.ApplyToIngress {
		defaults = func(service string, port int) (*ir.HeaderModifier, *ir.HeaderModifier, string, error) {
			return httpproxy.GlobalHeaders(pol, ing.Namespace, service, port)
		}
	}
	gw := t.g.Object()
	rules := ingress.Translate(t.g.EnvFor(o), t.g.Names(), ing, gw, t.shape, defaults)
	d := &detail{problems: rules.Problems}
	o.Clusters, o.Detail = rules.Clusters, d
	for i, h := range rules.Hosts {
		add := func(l *listener.Listener, routes []*ir.Route) {
			if l == nil {
				return
			}
			// Each host's routes are the Ingress's rule of the host's
			// index, so that entries of two hosts on one virtual host
			// stay apart.
			byHost := make([][]*ir.Route, len(rules.Hosts))
			byHost[i] = routes
			if !t.g.AddHost(o, l, h.Name, byHost, nil) {
				d.problems = append(d.problems, fmt.Sprintf("host %s: listener %s of Gateway %s/%s does not serve it", hostname.OrAny(h.Name), l.Spec.Name, gw.Namespace, gw.Name))
			}
		}
		switch {
		case h.Redirect != nil:
			add(http, []*ir.Route{h.Redirect})
		case h.HTTP:
			add(http, h.Routes)
		}
		if h.TLS {
			add(t.tlsHostListener(ing, h.Name), h.Routes)
		}
	}
}

// tlsHostListener returns the listener of one of an Ingress's TLS hosts,
// or nil.
func (t *gateway) tlsHostListener(ing *networkingv1.Ingress, host string) *listener.Listener {
	for _, l := range t.g.Listeners() {
		if s := l.Set; s != nil && s.Meta == &ing.ObjectMeta && l.Hostname == host {
			return l
		}
	}
	return nil
}

// Report adds to each served Ingress's problems those its outcome found,
// the routes of it that a route of the same match on the same host takes
// precedence over (see engine.Source), and its TLS hosts' listeners that
// cannot be served: those depend on other objects, so they are found
// again on every translation.
func (t *gateway) Report() {
	for _, ing := range t.ingresses {
		is := t.out[key(ing.Namespace, ing.Name)]
		o := t.g.Applied(&ing.ObjectMeta)
		if o == nil || is == nil {
			continue
		}
		if d, ok := o.Detail.(*detail); ok {
			for _, p := range d.problems {
				is.problem(p)
			}
		}
		// An Ingress's own path "/" before its default backend is what the
		// default backend is for: only another object's route shadows.
		t.g.Shadowed(o, func(h string, r *ir.Route, by *metav1.ObjectMeta) {
			is.problem(fmt.Sprintf("host %s, path %s: %s has the same match and takes precedence", h, r.Match.Path, t.g.DescribeOwner(by)))
		})
	}
	t.listenerProblems()
}

// RateLimit is nil: Ingress has no global rate limits.
func (t *gateway) RateLimit() *ir.RateLimitService { return nil }

func (is *Status) problem(msg string) {
	if !slices.Contains(is.Problems, msg) {
		is.Problems = append(is.Problems, msg)
	}
}

// listenerProblems reports the Ingresses' TLS hosts' listeners that
// cannot be served (a hostname the Gateway's listener serves, a missing
// certificate).
func (t *gateway) listenerProblems() {
	for _, l := range t.g.Listeners() {
		s := l.Set
		if s == nil || t.byMeta[s.Meta] == nil {
			continue
		}
		is := t.out[key(s.Meta.Namespace, s.Meta.Name)]
		if is == nil {
			continue
		}
		for _, p := range l.ServingProblems() {
			is.problem(fmt.Sprintf("TLS host %s: %s", l.Hostname, p.Message))
		}
	}
}

func key(ns, name string) types.NamespacedName {
	return types.NamespacedName{Namespace: ns, Name: name}
}
