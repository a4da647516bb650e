// Package graph draws what a translation serves, as Contour users had it
// in /debug/dag: each Gateway, its listeners, the routes, Ingresses and
// HTTPProxy trees attached to them, and the Services they send to, in
// Graphviz's DOT language. Refused objects are red, objects with
// references that do not resolve orange. It reads a translation's input
// and status and nothing else.
package graph

import (
	"bytes"
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"isobar.dev/controller/pkg/resources"
	"isobar.dev/controller/pkg/translate"
)

// colors of a node by what its status says.
const (
	fine     = "black"
	refused  = "red"
	dangling = "orange"
)

type graph struct {
	nodes map[string]string // id -> attributes
	edges map[[2]string]bool
	// services are the input's Services.
	services map[types.NamespacedName]bool
}

func (g *graph) node(id, shape, label, color string) {
	g.nodes[id] = fmt.Sprintf("shape=%s, label=%q, color=%s, fontcolor=%s", shape, label, color, color)
}

func (g *graph) edge(from, to string) { g.edges[[2]string{from, to}] = true }

// DOT draws the Gateways translated in st with what they serve from res.
func DOT(res *resources.Resources, st *translate.Status) []byte {
	g := &graph{nodes: map[string]string{}, edges: map[[2]string]bool{}, services: map[types.NamespacedName]bool{}}
	for _, svc := range res.Services {
		g.services[types.NamespacedName{Namespace: svc.Namespace, Name: svc.Name}] = true
	}
	for _, gw := range res.Gateways {
		k := types.NamespacedName{Namespace: gw.Namespace, Name: gw.Name}
		gs, ok := st.Gateways[k]
		if !ok {
			continue
		}
		id := "Gateway " + k.String()
		g.node(id, "box", id, colorOf(gs.Conditions))
		for _, l := range gw.Spec.Listeners {
			label := fmt.Sprintf("%s %s:%d", l.Name, l.Protocol, l.Port)
			if l.Hostname != nil {
				label += " " + string(*l.Hostname)
			}
			color := fine
			for _, ls := range gs.Listeners {
				if ls.Name == l.Name {
					color = colorOf(ls.Conditions)
				}
			}
			g.node(listenerID(k, string(l.Name)), "ellipse", label, color)
			g.edge(id, listenerID(k, string(l.Name)))
		}
	}
	g.routes(res, st)
	g.ingresses(res, st)
	g.proxies(res, st)
	return g.dot()
}

func listenerID(gw types.NamespacedName, name string) string {
	return "Gateway " + gw.String() + " listener " + name
}

// routes draws the Gateway API routes with a status entry for a drawn
// Gateway, under the listener their parentRef names (else the Gateway).
func (g *graph) routes(res *resources.Resources, st *translate.Status) {
	type route struct {
		kind, ns, name string
		refs           []gatewayv1.BackendObjectReference
	}
	var all []route
	for _, r := range res.HTTPRoutes {
		all = append(all, route{"HTTPRoute", r.Namespace, r.Name, backendRefs(r.Spec.Rules,
			func(x gatewayv1.HTTPRouteRule) []gatewayv1.HTTPBackendRef { return x.BackendRefs },
			func(b gatewayv1.HTTPBackendRef) gatewayv1.BackendObjectReference { return b.BackendObjectReference })})
	}
	for _, r := range res.GRPCRoutes {
		all = append(all, route{"GRPCRoute", r.Namespace, r.Name, backendRefs(r.Spec.Rules,
			func(x gatewayv1.GRPCRouteRule) []gatewayv1.GRPCBackendRef { return x.BackendRefs },
			func(b gatewayv1.GRPCBackendRef) gatewayv1.BackendObjectReference { return b.BackendObjectReference })})
	}
	for _, r := range res.TLSRoutes {
		all = append(all, route{"TLSRoute", r.Namespace, r.Name, backendRefs(r.Spec.Rules,
			func(x gatewayv1.TLSRouteRule) []gatewayv1.BackendRef { return x.BackendRefs },
			func(b gatewayv1.BackendRef) gatewayv1.BackendObjectReference { return b.BackendObjectReference })})
	}
	for _, r := range all {
		parents := st.Routes[translate.RouteKey{Kind: r.kind, Namespace: r.ns, Name: r.name}]
		if len(parents) == 0 {
			continue
		}
		id := r.kind + " " + r.ns + "/" + r.name
		color := fine
		for _, p := range parents {
			color = worse(color, colorOf(p.Conditions))
			gw := types.NamespacedName{Namespace: string(ptrOr(p.ParentRef.Namespace, gatewayv1.Namespace(r.ns))), Name: string(p.ParentRef.Name)}
			if p.ParentRef.SectionName != nil {
				g.edge(listenerID(gw, string(*p.ParentRef.SectionName)), id)
			} else {
				g.edge("Gateway "+gw.String(), id)
			}
		}
		g.node(id, "box", id, color)
		for _, b := range r.refs {
			if ptrOr(b.Kind, "Service") == "Service" && ptrOr(b.Group, "") == "" {
				g.service(string(ptrOr(b.Namespace, gatewayv1.Namespace(r.ns))), string(b.Name), id)
			}
		}
	}
}

// ingresses draws the served Ingresses under their Gateway.
func (g *graph) ingresses(res *resources.Resources, st *translate.Status) {
	for _, ing := range res.Ingresses {
		s, ok := st.Ingresses[types.NamespacedName{Namespace: ing.Namespace, Name: ing.Name}]
		if !ok {
			continue
		}
		id := "Ingress " + ing.Namespace + "/" + ing.Name
		color := fine
		if len(s.Problems) > 0 {
			color = dangling
		}
		g.node(id, "box", id, color)
		g.edge("Gateway "+s.Gateway.String(), id)
		if b := ing.Spec.DefaultBackend; b != nil && b.Service != nil {
			g.service(ing.Namespace, b.Service.Name, id)
		}
		for _, r := range ing.Spec.Rules {
			if r.HTTP == nil {
				continue
			}
			for _, p := range r.HTTP.Paths {
				if p.Backend.Service != nil {
					g.service(ing.Namespace, p.Backend.Service.Name, id)
				}
			}
		}
	}
}

// proxies draws the served HTTPProxies: roots under their Gateway, each
// include under the proxy that includes it.
func (g *graph) proxies(res *resources.Resources, st *translate.Status) {
	for _, p := range res.HTTPProxies {
		s, ok := st.HTTPProxies[types.NamespacedName{Namespace: p.Namespace, Name: p.Name}]
		if !ok {
			continue
		}
		id := "HTTPProxy " + p.Namespace + "/" + p.Name
		label := id
		if vh := p.Spec.VirtualHost; vh != nil {
			label += " " + vh.Fqdn
			g.edge("Gateway "+s.Gateway.String(), id)
		}
		color := fine
		switch s.Status.CurrentStatus {
		case "invalid", "orphaned":
			color = refused
		}
		g.node(id, "box", label, color)
		for _, inc := range p.Spec.Includes {
			g.edge(id, "HTTPProxy "+cmpOr(inc.Namespace, p.Namespace)+"/"+inc.Name)
		}
		for _, r := range p.Spec.Routes {
			for _, svc := range r.Services {
				g.service(p.Namespace, svc.Name, id)
			}
		}
		if tp := p.Spec.TCPProxy; tp != nil {
			for _, svc := range tp.Services {
				g.service(p.Namespace, svc.Name, id)
			}
		}
	}
}

// service draws Service ns/name, red when the input does not have it,
// sent to from from.
func (g *graph) service(ns, name, from string) {
	id := "Service " + ns + "/" + name
	if _, drawn := g.nodes[id]; !drawn {
		color := fine
		if !g.services[types.NamespacedName{Namespace: ns, Name: name}] {
			color = refused
		}
		g.node(id, "cylinder", id, color)
	}
	g.edge(from, id)
}

func (g *graph) dot() []byte {
	var b bytes.Buffer
	b.WriteString("digraph isobar {\n  rankdir=LR;\n  node [fontname=Helvetica];\n")
	ids := make([]string, 0, len(g.nodes))
	for id := range g.nodes {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		fmt.Fprintf(&b, "  %q [%s];\n", id, g.nodes[id])
	}
	edges := make([][2]string, 0, len(g.edges))
	for e := range g.edges {
		if _, ok := g.nodes[e[0]]; !ok {
			continue // a parent that is not drawn (a ListenerSet's listener)
		}
		if _, ok := g.nodes[e[1]]; ok {
			edges = append(edges, e)
		}
	}
	slices.SortFunc(edges, func(x, y [2]string) int { return strings.Compare(x[0]+"\x00"+x[1], y[0]+"\x00"+y[1]) })
	for _, e := range edges {
		fmt.Fprintf(&b, "  %q -> %q;\n", e[0], e[1])
	}
	b.WriteString("}\n")
	return b.Bytes()
}

// colorOf is refused when Accepted is false, dangling when ResolvedRefs
// is, else ok.
func colorOf(conds []metav1.Condition) string {
	out := fine
	for _, c := range conds {
		switch {
		case c.Type == "Accepted" && c.Status == metav1.ConditionFalse:
			return refused
		case c.Type == "ResolvedRefs" && c.Status == metav1.ConditionFalse:
			out = dangling
		}
	}
	return out
}

// worse is the color of the two that says more is wrong.
func worse(a, b string) string {
	rank := map[string]int{fine: 0, dangling: 1, refused: 2}
	if rank[b] > rank[a] {
		return b
	}
	return a
}

func ptrOr[T any](p *T, def T) T {
	if p == nil {
		return def
	}
	return *p
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// backendRefs are the backends of a route's rules, of any route kind.
func backendRefs[Rule, Ref any](rules []Rule, refs func(Rule) []Ref, object func(Ref) gatewayv1.BackendObjectReference) []gatewayv1.BackendObjectReference {
	var out []gatewayv1.BackendObjectReference
	for _, r := range rules {
		for _, b := range refs(r) {
			out = append(out, object(b))
		}
	}
	return out
}
