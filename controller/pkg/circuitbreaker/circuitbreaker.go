// Package circuitbreaker reads the limits Contour's Service annotations put
// on Envoy's traffic to a Service: projectcontour.io/max-connections,
// max-pending-requests, max-requests, max-retries and
// per-host-max-connections. As in Contour, they apply to the Service's
// clusters whatever routes them, Gateway API, HTTPProxy or Ingress: teams
// moving from Contour keep their limits.
package circuitbreaker

import (
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"

	"isobar.dev/controller/pkg/ir"
)

const prefix = "projectcontour.io/"

// Of returns the limits svc's annotations set, and a problem for each
// annotation whose value is not a whole number from 0 to 4294967295: that
// one sets nothing (Envoy's default applies), as Contour has it.
func Of(svc *corev1.Service) (ir.CircuitBreakers, []string) {
	var out ir.CircuitBreakers
	var problems []string
	for _, a := range []struct {
		name string
		into *uint32
	}{
		{"max-connections", &out.MaxConnections},
		{"max-pending-requests", &out.MaxPendingRequests},
		{"max-requests", &out.MaxRequests},
		{"max-retries", &out.MaxRetries},
		{"per-host-max-connections", &out.PerHostMaxConnections},
	} {
		v, ok := svc.Annotations[prefix+a.name]
		if !ok {
			continue
		}
		n, err := strconv.ParseUint(v, 10, 32)
		if err != nil {
			problems = append(problems, fmt.Sprintf("Service %s/%s: annotation %s%s %q is not a whole number from 0 to 4294967295, and sets no limit", svc.Namespace, svc.Name, prefix, a.name, v))
			continue
		}
		*a.into = uint32(n)
	}
	return out, problems
}
