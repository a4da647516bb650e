package gatewayapi

import (
	"fmt"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"isobar.dev/controller/pkg/hostname"
	"isobar.dev/controller/pkg/resources"
)

// kindClaim is a hostname an HTTPRoute or GRPCRoute serves on a listener.
type kindClaim struct {
	listener int
	host     string // "" for any
	kind     gatewayv1.Kind
	meta     *metav1.ObjectMeta
}

// kindConflicts applies the GRPCRoute and HTTPRoute hostname rule: when an
// HTTPRoute and a GRPCRoute on one listener have intersecting hostnames,
// exactly one of them is accepted there, the older (then the first by
// namespace/name). It returns, per losing route and listener index, why;
// update attaches again a route whose entry changed. Without
// GRPCRoutes on this Gateway it costs one pass over them and nothing else;
// an HTTPRoute is examined only when one of its hostnames could meet a
// GRPCRoute's.
func (t *gatewayTranslator) kindConflicts(res *resources.Resources) map[*metav1.ObjectMeta]map[int]string {
	var grpc []kindClaim
	for _, g := range res.GRPCRoutes {
		grpc = append(grpc, t.claims(routeOf("GRPCRoute", &g.ObjectMeta, &g.Spec.CommonRouteSpec, g.Spec.Hostnames))...)
	}
	if len(grpc) == 0 {
		return nil
	}
	// Every route whose claims could meet a GRPCRoute's, oldest first:
	// a route loses a listener to an accepted route of the other kind.
	type claimant struct {
		meta   *metav1.ObjectMeta
		claims []kindClaim
	}
	var routes []claimant
	for i := 0; i < len(grpc); {
		j := i
		for j < len(grpc) && grpc[j].meta == grpc[i].meta {
			j++
		}
		routes = append(routes, claimant{grpc[i].meta, grpc[i:j]})
		i = j
	}
	for _, h := range res.HTTPRoutes {
		if !mayMeet(h.Spec.Hostnames, grpc) {
			continue
		}
		if cs := t.claims(routeOf("HTTPRoute", &h.ObjectMeta, &h.Spec.CommonRouteSpec, h.Spec.Hostnames)); len(cs) > 0 {
			routes = append(routes, claimant{&h.ObjectMeta, cs})
		}
	}
	slices.SortStableFunc(routes, func(a, b claimant) int {
		switch {
		case routeOlder(a.meta, b.meta):
			return -1
		case routeOlder(b.meta, a.meta):
			return 1
		}
		return 0
	})
	var lost map[*metav1.ObjectMeta]map[int]string
	var accepted []kindClaim
	for _, r := range routes {
		losing := map[int]kindClaim{} // listener -> the winner
		for _, c := range r.claims {
			for _, w := range accepted {
				if w.listener != c.listener || w.kind == c.kind {
					continue
				}
				if _, ok := hostname.Intersect(c.host, w.host); ok {
					losing[c.listener] = w
				}
			}
		}
		for _, c := range r.claims {
			if _, ok := losing[c.listener]; !ok {
				accepted = append(accepted, c)
			}
		}
		for l, w := range losing {
			if lost == nil {
				lost = map[*metav1.ObjectMeta]map[int]string{}
			}
			if lost[r.meta] == nil {
				lost[r.meta] = map[int]string{}
			}
			lost[r.meta][l] = fmt.Sprintf("%s %s/%s, older, serves hostname %s on listener %q; an HTTPRoute and a GRPCRoute cannot share a hostname",
				w.kind, w.meta.Namespace, w.meta.Name, hostname.OrAny(w.host), t.listeners[l].Spec.Name)
		}
	}
	return lost
}

// claims are the listeners and hostnames a route would serve on this
// Gateway, as attachment computes them, without attaching it.
func (t *gatewayTranslator) claims(r route) []kindClaim {
	var out []kindClaim
	for _, ref := range t.refsOf(r) {
		set, ok := t.parentOf(ref, r.meta.Namespace)
		if !ok {
			continue
		}
		for i, l := range t.listeners {
			if !selectedBy(l, ref, set) || !l.Usable() || t.allows(nil, l, r) != "" {
				continue
			}
			for _, h := range t.routeHosts(l, r.hostnames) {
				if h == "*" {
					h = ""
				}
				out = append(out, kindClaim{listener: i, host: h, kind: r.kind, meta: r.meta})
			}
		}
	}
	return out
}

// mayMeet reports whether an HTTPRoute's hostnames could intersect a
// GRPCRoute's claims (without hostnames it claims everything its listener
// does).
func mayMeet(hostnames []gatewayv1.Hostname, grpc []kindClaim) bool {
	if len(hostnames) == 0 {
		return true
	}
	for _, h := range hostnames {
		for _, g := range grpc {
			if _, ok := hostname.Intersect(string(h), g.host); ok {
				return true
			}
		}
	}
	return false
}

// routeOlder orders routes by creation, then namespace/name.
func routeOlder(a, b *metav1.ObjectMeta) bool {
	if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
		return a.CreationTimestamp.Before(&b.CreationTimestamp)
	}
	return a.Namespace+"/"+a.Name < b.Namespace+"/"+b.Name
}
