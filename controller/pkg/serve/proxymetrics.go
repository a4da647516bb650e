package serve

import (
	contourv1 "github.com/projectcontour/contour/apis/projectcontour/v1"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"isobar.dev/controller/pkg/translate/httpproxies"
)

// Contour's HTTPProxy gauges, with Contour's names and labels, so that a
// Contour user's dashboards and alerts keep working: each controller
// counts the HTTPProxies its Gateway serves.
var (
	proxyTotal = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "contour_httpproxy", Help: "HTTPProxies the Gateway serves, whatever their status, by namespace.",
	}, []string{"namespace"})
	proxyRoots = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "contour_httpproxy_root", Help: "Root HTTPProxies (those with a virtualhost) the Gateway serves, by namespace.",
	}, []string{"namespace"})
	proxyValid = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "contour_httpproxy_valid", Help: "Valid HTTPProxies the Gateway serves, by namespace and virtual host (empty for an included proxy).",
	}, []string{"namespace", "vhost"})
	proxyInvalid = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "contour_httpproxy_invalid", Help: "Invalid HTTPProxies (orphans apart) the Gateway serves, by namespace and virtual host (empty for an included proxy).",
	}, []string{"namespace", "vhost"})
	proxyOrphaned = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "contour_httpproxy_orphaned", Help: "HTTPProxies of the Gateway's ingress classes that no root includes, by namespace.",
	}, []string{"namespace"})
)

func init() {
	metrics.Registry.MustRegister(proxyTotal, proxyRoots, proxyValid, proxyInvalid, proxyOrphaned)
}

// proxyCounts are the values of Contour's HTTPProxy gauges, by their
// labels (namespace, then the virtual host where the gauge has it).
type proxyCounts struct {
	total, roots, orphaned map[string]int
	valid, invalid         map[[2]string]int
}

// countProxies counts the served HTTPProxies as Contour does: every one
// in total; roots by their virtual host; valid, invalid or orphaned by
// their status.
func countProxies(statuses map[types.NamespacedName]*httpproxies.Status, proxies []*contourv1.HTTPProxy) proxyCounts {
	c := proxyCounts{total: map[string]int{}, roots: map[string]int{}, orphaned: map[string]int{}, valid: map[[2]string]int{}, invalid: map[[2]string]int{}}
	for _, p := range proxies {
		st, ok := statuses[types.NamespacedName{Namespace: p.Namespace, Name: p.Name}]
		if !ok {
			continue
		}
		ns, vhost := p.Namespace, ""
		if p.Spec.VirtualHost != nil {
			vhost = p.Spec.VirtualHost.Fqdn
			c.roots[ns]++
		}
		c.total[ns]++
		switch st.Status.CurrentStatus {
		case "valid":
			c.valid[[2]string{ns, vhost}]++
		case "orphaned":
			c.orphaned[ns]++
		default:
			c.invalid[[2]string{ns, vhost}]++
		}
	}
	return c
}

// proxyGauges sets the gauges to counts, removing the label sets the
// previous counts had and these do not (rather than resetting, which a
// scrape could see half done).
type proxyGauges struct{ last proxyCounts }

func (g *proxyGauges) set(c proxyCounts) {
	one := func(v *prometheus.GaugeVec, now, before map[string]int) {
		for k, n := range now {
			v.WithLabelValues(k).Set(float64(n))
		}
		for k := range before {
			if _, ok := now[k]; !ok {
				v.DeleteLabelValues(k)
			}
		}
	}
	two := func(v *prometheus.GaugeVec, now, before map[[2]string]int) {
		for k, n := range now {
			v.WithLabelValues(k[0], k[1]).Set(float64(n))
		}
		for k := range before {
			if _, ok := now[k]; !ok {
				v.DeleteLabelValues(k[0], k[1])
			}
		}
	}
	one(proxyTotal, c.total, g.last.total)
	one(proxyRoots, c.roots, g.last.roots)
	one(proxyOrphaned, c.orphaned, g.last.orphaned)
	two(proxyValid, c.valid, g.last.valid)
	two(proxyInvalid, c.invalid, g.last.invalid)
	g.last = c
}
