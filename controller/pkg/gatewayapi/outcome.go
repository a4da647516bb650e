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
	// epoch is the last translation that used the outcome; unused ones
	// are swept out now and then.
	epoch uint64
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
	// conflicts fingerprints which routes lose hostnames to routes of the
	// other kind.
	conflicts uint64
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
	t.status.addRoutes(o.kind, o.meta, o.statuses)
}

func (c *cache) outcome(gw *gatewayv1.Gateway, key any, ctx gatewayContext) (*outcome, bool) {
	o, ok := c.outcomes[gw][key]
	if !ok || o.ctx != ctx {
		return nil, false
	}
	o.epoch = c.epoch
	c.used[gw]++
	return o, true
}

// storeOutcome records an outcome in the persistent map; marking what a
// translation used, rather than copying it into a fresh map, keeps the
// cost of an unchanged route to a field write.
func (c *cache) storeOutcome(gw *gatewayv1.Gateway, key any, o *outcome) {
	m, ok := c.outcomes[gw]
	if !ok {
		m = map[any]*outcome{}
		c.outcomes[gw] = m
	}
	if old, ok := m[key]; !ok || old.epoch != c.epoch {
		c.used[gw]++
	}
	o.epoch = c.epoch
	m[key] = o
}

// sweepOutcomes forgets the outcomes of Gateways this translation did not
// see, and of routes it did not use once they are a quarter of a Gateway's
// outcomes, so a deleted route's outcome does not outlive it for long and
// sweeping stays amortised.
func (c *cache) sweepOutcomes() {
	for gw, m := range c.outcomes {
		used := c.used[gw]
		switch stale := len(m) - used; {
		case used == 0:
			delete(c.outcomes, gw)
		case stale > 0 && stale >= len(m)/4:
			for k, o := range m {
				if o.epoch != c.epoch {
					delete(m, k)
				}
			}
		}
	}
}
