package httpproxy

import (
	"fmt"
	"time"

	contourv1 "github.com/projectcontour/contour/apis/projectcontour/v1"

	"isobar.dev/controller/pkg/ir"
	"isobar.dev/controller/pkg/validate"
)

// Contour's health check defaults, for what a policy leaves unset.
const (
	healthCheckHost      = "contour-envoy-healthcheck"
	healthCheckInterval  = 10 * time.Second
	healthCheckTimeout   = 2 * time.Second
	healthCheckUnhealthy = 3
	healthCheckHealthy   = 2
)

// healthCheck reads a route's healthCheckPolicy as Contour does: an HTTP
// GET of path, with Contour's defaults for what it leaves unset, against
// each endpoint of the route's services; expected statuses are half-open
// ranges within [100, 600).
func healthCheck(p *contourv1.HTTPHealthCheckPolicy) (*ir.HealthCheck, *problem) {
	if p == nil {
		return nil, nil
	}
	bad := func(format string, args ...any) (*ir.HealthCheck, *problem) {
		return nil, refused(contourv1.ConditionTypeRouteError, "HealthCheckPolicyInvalid", fmt.Sprintf(format, args...))
	}
	if err := validate.Path("healthCheckPolicy.path", p.Path); err != nil || p.Path == "" {
		return bad("healthCheckPolicy.path %q is not a path", p.Path)
	}
	if p.Host != "" && validate.Hostname(p.Host, false) != nil {
		return bad("healthCheckPolicy.host %q is not a host name", p.Host)
	}
	if p.IntervalSeconds < 0 || p.TimeoutSeconds < 0 || p.UnhealthyThresholdCount < 0 || p.HealthyThresholdCount < 0 {
		return bad("healthCheckPolicy: intervals, timeouts and thresholds cannot be negative")
	}
	h := &ir.HealthCheck{
		HTTP:      &ir.HTTPHealthCheck{Path: p.Path, Host: healthCheckHost},
		Interval:  healthCheckInterval,
		Timeout:   healthCheckTimeout,
		Unhealthy: healthCheckUnhealthy,
		Healthy:   healthCheckHealthy,
	}
	if p.Host != "" {
		h.HTTP.Host = p.Host
	}
	if p.IntervalSeconds > 0 {
		h.Interval = time.Duration(p.IntervalSeconds) * time.Second
	}
	if p.TimeoutSeconds > 0 {
		h.Timeout = time.Duration(p.TimeoutSeconds) * time.Second
	}
	if p.UnhealthyThresholdCount > 0 {
		h.Unhealthy = uint32(min(p.UnhealthyThresholdCount, 1<<31))
	}
	if p.HealthyThresholdCount > 0 {
		h.Healthy = uint32(min(p.HealthyThresholdCount, 1<<31))
	}
	for _, r := range p.ExpectedStatuses {
		// Half-open, as Envoy's: the start is in the range, the end not.
		if r.Start < 100 || r.Start > 599 {
			return bad("invalid expected status range: start must be in the range [100, 599]")
		}
		if r.End < 101 || r.End > 600 {
			return bad("invalid expected status range: end must be in the range [101, 600]")
		}
		if r.End <= r.Start {
			return bad("invalid expected status range [%d, %d): it holds no status", r.Start, r.End)
		}
		h.HTTP.ExpectedStatuses = append(h.HTTP.ExpectedStatuses, ir.StatusRange{Start: r.Start, End: r.End})
	}
	return h, nil
}
