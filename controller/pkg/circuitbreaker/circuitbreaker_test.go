package circuitbreaker

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"isobar.dev/controller/pkg/ir"
)

func TestOf(t *testing.T) {
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "cart", Annotations: map[string]string{
		"projectcontour.io/max-connections":          "100",
		"projectcontour.io/max-pending-requests":     "0",
		"projectcontour.io/max-requests":             "many",
		"projectcontour.io/max-retries":              "-1",
		"projectcontour.io/per-host-max-connections": "4",
		"projectcontour.io/max-other":                "7",
	}}}
	got, problems := Of(svc)
	if want := (ir.CircuitBreakers{MaxConnections: 100, PerHostMaxConnections: 4}); got != want {
		t.Errorf("limits %+v, want %+v", got, want)
	}
	if len(problems) != 2 {
		t.Errorf("problems %q, want max-requests and max-retries", problems)
	}
}
