package serve

import (
	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"isobar.dev/api/target"
	"isobar.dev/controller/pkg/resources"
	"isobar.dev/controller/pkg/unserved"
)

var unservedObjects = prometheus.NewGaugeVec(prometheus.GaugeOpts{
	Name: "isobar_unserved_objects",
	Help: "Ingresses and HTTPProxies that no Gateway of this controllerName serves (their ingress class is missing, " +
		"another controller's or names no served Gateway), by kind; set by the controller whose Gateway controllerName mode would pick.",
}, []string{"kind"})

func init() { metrics.Registry.MustRegister(unservedObjects) }

// unservedReport tells what no Gateway serves: Kubernetes drops an
// Ingress or HTTPProxy no class claims without a word. Every fleet's
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
	counts := map[string]int{"Ingress": 0, "HTTPProxy": 0}
	for _, n := range unserved.ByClass(res, controller, unserved.OursServed(res, controller)) {
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
