package serve

import (
	"errors"
	"path"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"isobar.dev/controller/pkg/xdsserver"
)

var (
	translationSeconds = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "isobar_translation_seconds",
		Help:    "Time to translate the Gateway and its routes into Envoy configuration.",
		Buckets: prometheus.ExponentialBuckets(0.001, 2, 14),
	})
	updateStageSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "isobar_update_stage_seconds",
		Help: "Where a change's time goes before Envoys are sent it, by stage: batch (from the first change a pass covers to the pass: the update delay), " +
			"snapshot (listing the informers' objects), translate (both stages), xds (the xDS server's update: diff, encode, hand to the streams).",
		Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16),
	}, []string{"stage"})
	statusWrites = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "isobar_status_writes_total",
		Help: "Status updates written, by kind.",
	}, []string{"kind"})
	statusChecks = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "isobar_status_checks_total",
		Help: "Route and policy statuses read to compare with the translation's, by kind: what a status pass costs before it writes.",
	}, []string{"kind"})
	statusRefusals = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "isobar_status_refusals_total",
		Help: "Status updates the API server refused as invalid (logged, not retried), by kind.",
	}, []string{"kind"})
	endpointPushes = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "isobar_endpoint_fast_path_pushes_total",
		Help: "Endpoint-only changes pushed without a full translation.",
	})
	endpointNamespaces = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "isobar_endpointslice_watched_namespaces",
		Help: "Namespaces whose EndpointSlices are watched: those of the served Gateway's backends.",
	})
)

func init() {
	metrics.Registry.MustRegister(translationSeconds, updateStageSeconds, statusWrites, statusChecks, statusRefusals, endpointPushes, endpointNamespaces)
}

// xdsCollector reads the xDS server's counters at scrape time, so the
// server itself needs no Prometheus dependency.
type xdsCollector struct {
	s                             *xdsserver.Server
	connected, acks, nacks, types *prometheus.Desc
	firstPushes, waiting          *prometheus.Desc
}

func newXDSCollector(s *xdsserver.Server) *xdsCollector {
	return &xdsCollector{
		s:           s,
		connected:   prometheus.NewDesc("isobar_xds_connected_envoys", "Envoys with an open ADS stream.", nil, nil),
		acks:        prometheus.NewDesc("isobar_xds_acks_total", "Responses Envoys acknowledged.", nil, nil),
		nacks:       prometheus.NewDesc("isobar_xds_nacks_total", "Responses Envoys rejected.", nil, nil),
		types:       prometheus.NewDesc("isobar_xds_version", "The served version of each resource type; it changes only when content does.", []string{"type"}, nil),
		firstPushes: prometheus.NewDesc("isobar_xds_first_pushes", "Envoys being sent their first configuration (bounded by --max-first-pushes).", nil, nil),
		waiting:     prometheus.NewDesc("isobar_xds_first_push_waiting", "Envoys waiting to be sent their first configuration.", nil, nil),
	}
}

func (c *xdsCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.connected
	ch <- c.acks
	ch <- c.nacks
	ch <- c.types
	ch <- c.firstPushes
	ch <- c.waiting
}

func (c *xdsCollector) Collect(ch chan<- prometheus.Metric) {
	n := c.s.Counters()
	ch <- prometheus.MustNewConstMetric(c.connected, prometheus.GaugeValue, float64(n.Connected))
	ch <- prometheus.MustNewConstMetric(c.acks, prometheus.CounterValue, float64(n.ACKs))
	ch <- prometheus.MustNewConstMetric(c.nacks, prometheus.CounterValue, float64(n.NACKs))
	ch <- prometheus.MustNewConstMetric(c.firstPushes, prometheus.GaugeValue, float64(n.FirstPushes))
	ch <- prometheus.MustNewConstMetric(c.waiting, prometheus.GaugeValue, float64(n.Waiting))
	for t, v := range n.Versions {
		ch <- prometheus.MustNewConstMetric(c.types, prometheus.GaugeValue, float64(v), path.Base(t))
	}
}

// registerXDSMetrics registers the collector once per process.
func registerXDSMetrics(s *xdsserver.Server) error {
	err := metrics.Registry.Register(newXDSCollector(s))
	if are := (prometheus.AlreadyRegisteredError{}); errors.As(err, &are) {
		return nil
	}
	return err
}
