package serve

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

var (
	translationSeconds = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "isobar_translation_seconds",
		Help:    "Time to translate the Gateway and its routes into Envoy configuration.",
		Buckets: prometheus.ExponentialBuckets(0.001, 2, 14),
	})
	statusWrites = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "isobar_status_writes_total",
		Help: "Status updates written, by kind.",
	}, []string{"kind"})
)

func init() {
	metrics.Registry.MustRegister(translationSeconds, statusWrites)
}
