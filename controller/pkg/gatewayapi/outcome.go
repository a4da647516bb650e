package gatewayapi

import (
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"isobar.dev/controller/pkg/ir"
)

// An outcome is everything attaching one HTTPRoute or GRPCRoute to one
// Gateway did: its parent statuses, the listeners it counted on, the routes
// it added to virtual hosts and the clusters those use. While the route
// object, the Gateway's context and the backend world are unchanged, a
// translation replays the outcome instead of attaching the route again, so
// that a change to one route of many costs little more than that route.
type outcome struct {
	ctx      gatewayContext
	statuses []gatewayv1.RouteParentStatus
	counted  []int // indexes of listeners whose attachedRoutes it adds to
	added    []addition
	clusters []clusterSpec
	kind     string
	meta     *metav1.ObjectMeta
}

type addition struct {
	listener int
	hosts    []string
	routes   [][]*ir.Route
}

// gatewayContext is what attachment depends on besides the route: the
// Gateway object, which of its listeners are usable, the namespaces (for
// selectors) and the backend world.
type gatewayContext struct {
	gw         *gatewayv1.Gateway
	usable     string
	namespaces uint64
	world      uint64
}

func (t *gatewayTranslator) context() gatewayContext {
	var b strings.Builder
	for _, l := range t.listeners {
		if l.usable() {
			b.WriteByte('1')
		} else {
			b.WriteByte('0')
		}
	}
	return gatewayContext{gw: t.gw, usable: b.String(), namespaces: t.idx.namespacesVersion, world: t.idx.world}
}

// recorder collects an outcome while a route is attached for real.
type recorder struct {
	o        *outcome
	attached []int32
}

func (t *gatewayTranslator) startRecording(kind string, meta *metav1.ObjectMeta) {
	rec := &recorder{o: &outcome{ctx: t.ctx, kind: kind, meta: meta}}
	for _, l := range t.listeners {
		rec.attached = append(rec.attached, l.attached)
	}
	t.rec = rec
}

func (t *gatewayTranslator) stopRecording(key any) {
	rec := t.rec
	t.rec = nil
	for i, l := range t.listeners {
		for n := rec.attached[i]; n < l.attached; n++ {
			rec.o.counted = append(rec.o.counted, i)
		}
	}
	t.cache.storeOutcome(t.gw, key, rec.o)
}

// replay applies a recorded outcome as attaching the route would.
func (t *gatewayTranslator) replay(o *outcome) {
	for _, i := range o.counted {
		t.listeners[i].attached++
	}
	for _, s := range o.clusters {
		t.ensureCluster(s)
	}
	for _, a := range o.added {
		t.addRoutes(t.listeners[a.listener], a.hosts, o.meta, a.routes)
	}
	for _, s := range o.statuses {
		t.status.addRoute(o.kind, o.meta, s)
	}
}

func (c *cache) outcome(gw *gatewayv1.Gateway, key any, ctx gatewayContext) (*outcome, bool) {
	o, ok := c.outcomes[gw][key]
	if !ok || o.ctx != ctx {
		return nil, false
	}
	c.storeOutcome(gw, key, o)
	return o, true
}

func (c *cache) storeOutcome(gw *gatewayv1.Gateway, key any, o *outcome) {
	m, ok := c.freshOutcomes[gw]
	if !ok {
		m = map[any]*outcome{}
		c.freshOutcomes[gw] = m
	}
	m[key] = o
}
