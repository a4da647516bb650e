// Package ports is the contract between the operator, which publishes Envoy
// through a Service, and the controller, which opens Envoy's listeners: for
// a Gateway listener port, which port Envoy listens on inside its container,
// and which ports are taken.
//
// Envoy runs as a non-root user without CAP_NET_BIND_SERVICE, so it cannot
// bind ports below 1024. A listener port p in 1..1023 is therefore served on
// container port p+64512 (64513..65535) and the Service maps p to it; every
// other port is served as it is.
package ports

import (
	"fmt"
	"slices"
)

// PrivilegedOffset is added to a privileged listener port to get the
// container port Envoy binds.
const PrivilegedOffset = 64512

// Ports that the fleet's own processes use. No listener may map onto them.
const (
	// XDS is the controller's ADS gRPC server.
	XDS = 8001
	// ControllerHealth serves the controller's /healthz and /readyz.
	ControllerHealth = 8000
	// ControllerMetrics serves the controller's Prometheus metrics. (Not
	// 8080: that is the most common Gateway listener port after 80 and 443.)
	ControllerMetrics = 8003
	// EnvoyStats is Envoy's listener for /stats/prometheus and /ready.
	EnvoyStats = 8002
	// EnvoyAdmin is Envoy's admin interface, bound to 127.0.0.1 only.
	EnvoyAdmin = 9001
	// EnvoyShutdown serves the drain hook that a stopping Envoy pod calls.
	EnvoyShutdown = 8004
	// EnvoyOverloadHealth is Envoy's /ready that the overload manager's
	// connection limit governs (envoy.omEnforcedHealth). It is reserved
	// whether or not a profile turns it on, so that turning it on never
	// takes a port from a Gateway's listener.
	EnvoyOverloadHealth = 8005
)

// reserved names the ports above, for error messages.
var reserved = map[int32]string{
	XDS:                 "the controller's xDS server",
	ControllerHealth:    "the controller's health endpoint",
	ControllerMetrics:   "the controller's metrics endpoint",
	EnvoyStats:          "Envoy's stats and readiness listener",
	EnvoyAdmin:          "Envoy's admin interface",
	EnvoyShutdown:       "Envoy's drain hook",
	EnvoyOverloadHealth: "Envoy's overload-enforced readiness listener",
}

// ContainerPort is the port Envoy binds for Gateway listener port p. It does
// not check that p is a valid port; Validate does.
func ContainerPort(p int32) int32 {
	if p >= 1 && p <= 1023 {
		return p + PrivilegedOffset
	}
	return p
}

// Reserved reports whether container port p is used by the fleet itself, and
// by what.
func Reserved(p int32) (string, bool) {
	what, ok := reserved[p]
	return what, ok
}

// Validate returns why listener port p cannot be served, or nil. It checks
// the port range and collisions with the fleet's own ports; collisions
// between listeners are Map's.
func Validate(p int32) error {
	if p < 1 || p > 65535 {
		return fmt.Errorf("port %d is outside 1-65535", p)
	}
	c := ContainerPort(p)
	if what, ok := Reserved(c); ok {
		if c != p {
			return fmt.Errorf("port %d maps to container port %d, which is %s", p, c, what)
		}
		return fmt.Errorf("port %d is %s", p, what)
	}
	return nil
}

// Mapping is the result of mapping a Gateway's listener ports.
type Mapping struct {
	// Container maps each servable listener port to its container port.
	Container map[int32]int32
	// Refused says why each listener port that cannot be served is refused.
	Refused map[int32]error
}

// Map maps a Gateway's listener ports (duplicates allowed: listeners that
// share a port share an Envoy listener). A port is refused when Validate
// refuses it or when another listener port maps to the same container port
// (1 and 64513 both map to 64513); then both are refused, so that which one
// wins never depends on the order of the listeners.
func Map(listenerPorts []int32) Mapping {
	m := Mapping{Container: map[int32]int32{}, Refused: map[int32]error{}}
	users := map[int32][]int32{} // container port -> distinct listener ports
	for _, p := range listenerPorts {
		if _, seen := m.Container[p]; seen {
			continue
		}
		if _, seen := m.Refused[p]; seen {
			continue
		}
		if err := Validate(p); err != nil {
			m.Refused[p] = err
			continue
		}
		c := ContainerPort(p)
		m.Container[p] = c
		users[c] = append(users[c], p)
	}
	for c, ps := range users {
		if len(ps) < 2 {
			continue
		}
		slices.Sort(ps)
		for _, p := range ps {
			delete(m.Container, p)
			m.Refused[p] = fmt.Errorf("ports %v all map to container port %d", ps, c)
		}
	}
	return m
}
