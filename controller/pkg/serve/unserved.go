package serve

import (
	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"isobar.dev/api/target"
	"isobar.dev/controller/pkg/resources"
	"isobar.dev/controller/pkg/unserved"
)

var unservedObjects = prometheus.NewGaugeVec(prometheus.GaugeOpts{
	Name: "isobar_unserved_objects",
	Help: "Objects that no Gateway serves, by kind: Ingresses and HTTPProxies whose ingress class is missing, another controller's " +
		"or names no served Gateway of this controllerName, routes whose parentRefs name no Gateway that exists, Gateways whose " +
		"GatewayClass does not exist; set by the controller whose Gateway controllerName mode would pick.",
}, []string{"kind"})

func init() { metrics.Registry.MustRegister(unservedObjects) }

// unservedReport tells what no Gateway serves: Kubernetes drops an
// Ingress or HTTPProxy no class claims, a route whose Gateway is not there
// and a Gateway whose class is not, without a word. Every fleet's
// controller sees the whole cluster, so one speaks for all: the one whose
// Gateway controllerName mode would pick (the oldest Gateway of the oldest
// GatewayClass with our controllerName), which every replica computes
// alike. It logs each object when it becomes unserved, and when it no
// longer is, and counts them.
type unservedReport struct {
	last map[unserved.Note]bool
}

func (u *unservedReport) update(log logr.Logger, res *resources.Resources, served target.Target, controller string) {
	pick := target.Pick(res.GatewayClasses, res.Gateways, controller)
	if pick.Gateway != served.Gateway {
		if u.last != nil {
			unservedObjects.Reset()
			u.last = nil
		}
		return
	}
	now := map[unserved.Note]bool{}
	counts := map[string]int{"Ingress": 0, "HTTPProxy": 0, "Gateway": 0, "HTTPRoute": 0, "GRPCRoute": 0, "TLSRoute": 0, "TCPRoute": 0, "UDPRoute": 0}
	for _, n := range notes(res, controller) {
		now[n] = true
		counts[n.Kind]++
		if !u.last[n] {
			log.Info("not served", "kind", n.Kind, "namespace", n.Namespace, "name", n.Name, "reason", n.Why)
		}
	}
	for n := range u.last {
		if !now[n] {
			log.Info("no longer unserved", "kind", n.Kind, "namespace", n.Namespace, "name", n.Name, "was", n.Why)
		}
	}
	for kind, c := range counts {
		unservedObjects.WithLabelValues(kind).Set(float64(c))
	}
	u.last = now
}

// notes are what no Gateway serves in res: the Ingresses and HTTPProxies
// no class hands to a served Gateway, the Gateways without a GatewayClass,
// and the routes whose parentRefs name no Gateway that exists.
func notes(res *resources.Resources, controller string) []unserved.Note {
	out := unserved.ByClass(res, controller, unserved.OursServed(res, controller))
	out = append(out, unserved.WithoutClass(res)...)
	exists := unserved.Exists(res)
	route := func(kind string, o client.Object) {
		if p, ok := routeParents(o); ok {
			if n, ok := unserved.ByParents(kind, o.GetNamespace(), o.GetName(), p, exists); ok {
				out = append(out, n)
			}
		}
	}
	for _, r := range res.HTTPRoutes {
		route("HTTPRoute", r)
	}
	for _, r := range res.GRPCRoutes {
		route("GRPCRoute", r)
	}
	for _, r := range res.TLSRoutes {
		route("TLSRoute", r)
	}
	for _, r := range res.TCPRoutes {
		route("TCPRoute", r)
	}
	for _, r := range res.UDPRoutes {
		route("UDPRoute", r)
	}
	return out
}
