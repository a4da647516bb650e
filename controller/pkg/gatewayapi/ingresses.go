package gatewayapi

import (
	"fmt"
	"slices"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"isobar.dev/api/ingressclass"
	"isobar.dev/controller/pkg/engine"
	"isobar.dev/controller/pkg/hostname"
	"isobar.dev/controller/pkg/httpproxy"
	"isobar.dev/controller/pkg/ingress"
	"isobar.dev/controller/pkg/ir"
	"isobar.dev/controller/pkg/resources"
)

// IngressStatus is what the controller serving a Gateway reports on an
// Ingress it serves: the load balancer status comes from the Gateway's
// addresses, and Problems become Events (an Ingress has no conditions).
type IngressStatus struct {
	Gateway types.NamespacedName
	// Served says the Gateway has the listeners Ingress needs, so that
	// the Ingress gets the Gateway's addresses.
	Served   bool
	Problems []string
}

// ingressSets finds the Ingresses the Gateway serves (t.ingresses) and
// returns the listeners of their TLS hosts, a set per Ingress, allowed
// whatever the Gateway's allowedListeners (they are the Gateway's own
// Ingress listeners).
func (t *gatewayTranslator) ingressSets(res *resources.Resources) []*listenerSet {
	selected := ingressclass.Selected(t.gw, string(t.controller), res.IngressClasses, res.Ingresses)
	if len(selected) == 0 {
		return nil
	}
	gwName := types.NamespacedName{Namespace: t.gw.Namespace, Name: t.gw.Name}
	shape, err := ingress.ShapeOf(t.gw)
	if err != nil {
		for _, ing := range selected {
			t.status.Ingresses[key(ing.Namespace, ing.Name)] = &IngressStatus{Gateway: gwName, Problems: []string{err.Error()}}
		}
		return nil
	}
	t.ingressShape = &shape
	var sets []*listenerSet
	for _, ing := range selected {
		entries, problems := ingress.Listeners(ing, t.gw, shape)
		t.status.Ingresses[key(ing.Namespace, ing.Name)] = &IngressStatus{Gateway: gwName, Served: true, Problems: problems}
		t.ingresses = append(t.ingresses, ing)
		if len(entries) > 0 {
			sets = append(sets, &listenerSet{meta: &ing.ObjectMeta, entries: entries, ingress: ing})
		}
	}
	return sets
}

// attachIngress adds an Ingress's routes to the virtual hosts of
// ingress-http (the Gateway's first listener) and of its TLS hosts'
// listeners, as its outcome. rank is its place among the routes and
// Ingresses attached with it.
func (t *gatewayTranslator) attachIngress(ing *networkingv1.Ingress, rank int32) {
	o := t.record("Ingress", &ing.ObjectMeta, rank)
	if o == nil {
		return
	}
	defer t.state.Apply(o)
	// ingress-http's allowedRoutes say which namespaces' Ingresses it
	// serves, as for HTTPRoutes; the TLS hosts' listeners are the
	// Ingress's own.
	http := t.listeners[0]
	if msg := t.allows(o, http, route{kind: "HTTPRoute", meta: &ing.ObjectMeta}); msg != "" {
		o.Detail = &detail{problems: []string{msg}}
		return
	}
	var defaults ingress.Defaults
	if pol := t.profile.HTTPProxyOrDefault().Policy; pol != nil && pol.ApplyToIngress {
		defaults = func(service string, port int) (*ir.HeaderModifier, *ir.HeaderModifier, string, error) {
			return httpproxy.GlobalHeaders(pol, ing.Namespace, service, port)
		}
	}
	rules := ingress.Translate(t.newEnv(&o.Reads), &t.cache.Names, ing, t.gw, *t.ingressShape, defaults)
	o.Clusters, o.Detail = rules.Clusters, &detail{problems: rules.Problems}
	for i, h := range rules.Hosts {
		add := func(l *listener, routes []*ir.Route) {
			// Each host's routes are the Ingress's rule of the host's
			// index, so that entries of two hosts on one virtual host
			// stay apart.
			byHost := make([][]*ir.Route, len(rules.Hosts))
			byHost[i] = routes
			if !t.addHost(o, l, h.Name, byHost, nil) {
				o.Detail.problems = append(o.Detail.problems, fmt.Sprintf("host %s: listener %s of Gateway %s/%s does not serve it", hostname.OrAny(h.Name), l.spec.Name, t.gw.Namespace, t.gw.Name))
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

// addHost adds routes to the virtual host of a hostname ("" for every
// host) on listener l, as part of outcome o, with the host's own policy
// when o owns the host. It reports false when l does
// not serve the hostname; an unusable listener (nil for none) takes
// nothing, and its own status says why.
func (t *gatewayTranslator) addHost(o *outcome, l *listener, host string, rules [][]*ir.Route, policy *ir.VirtualHostPolicy) bool {
	if l == nil || !l.usable() {
		return true
	}
	var hostnames []gatewayv1.Hostname
	if host != "" {
		hostnames = []gatewayv1.Hostname{gatewayv1.Hostname(host)}
	}
	hosts := t.routeHosts(l, hostnames)
	if len(hosts) == 0 {
		return false
	}
	o.Added = append(o.Added, engine.Addition{Listener: slices.Index(t.listeners, l), Hosts: hosts, Routes: redirectsFor(l, rules), Policy: policy})
	return true
}

// tlsHostListener returns the listener of one of an Ingress's TLS hosts.
func (t *gatewayTranslator) tlsHostListener(ing *networkingv1.Ingress, host string) *listener {
	for _, l := range t.listeners {
		if l.set != nil && l.set.ingress == ing && l.hostname == host {
			return l
		}
	}
	return nil
}

// reportIngresses adds to each served Ingress's problems those its
// outcome found, and the routes of it that a route of the same match on
// the same host takes precedence over (see source): those depend on the
// other routes, so they are found again on every translation.
func (t *gatewayTranslator) reportIngresses() {
	for _, ing := range t.ingresses {
		is := t.status.Ingresses[key(ing.Namespace, ing.Name)]
		o := t.state.Applied(&ing.ObjectMeta)
		if o == nil || is == nil {
			continue
		}
		if o.Detail != nil {
			for _, p := range o.Detail.problems {
				is.problem(p)
			}
		}
		// An Ingress's own path "/" before its default backend is what the
		// default backend is for: only another object's route shadows.
		t.state.Shadowed(o, func(h string, r *ir.Route, by *metav1.ObjectMeta) {
			is.problem(fmt.Sprintf("host %s, path %s: %s has the same match and takes precedence", h, r.Match.Path, t.describeOwner(by)))
		})
	}
}

// describeOwner names the route or Ingress an entry of the state is of.
func (t *gatewayTranslator) describeOwner(meta *metav1.ObjectMeta) string {
	kind := "route"
	if o := t.state.Applied(meta); o != nil {
		kind = o.Kind
	}
	return fmt.Sprintf("%s %s/%s", kind, meta.Namespace, meta.Name)
}

func (is *IngressStatus) problem(msg string) {
	if !slices.Contains(is.Problems, msg) {
		is.Problems = append(is.Problems, msg)
	}
}

// ingressListenerProblems reports an Ingress's TLS listeners that cannot
// be served (a hostname the Gateway's listener serves, a missing
// certificate).
func (t *gatewayTranslator) ingressListenerProblems(s *listenerSet) {
	is := t.status.Ingresses[key(s.ingress.Namespace, s.ingress.Name)]
	if is == nil {
		return
	}
	for _, l := range s.listeners {
		for _, p := range l.problems {
			if servingTypes[p.Type] {
				is.problem(fmt.Sprintf("TLS host %s: %s", l.hostname, p.Message))
			}
		}
	}
}
