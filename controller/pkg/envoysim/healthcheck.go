package envoysim

import (
	"net"
	"strconv"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
)

// HealthCheck is how Envoy checks each endpoint of a cluster (its
// health_checks): every Interval, an HTTP GET of Path with Host (in HTTP/2
// when HTTP2), healthy when its status is in ExpectedStatuses ([200,
// 201) when none), or else a TCP connection, within Timeout. Unhealthy
// failures in a row take a healthy endpoint out, Healthy successes bring
// it back, and a new endpoint is in from its first success. The
// simulator's answers pick among every endpoint; a data plane that runs
// the checks picks among the healthy (PickHealthy).
type HealthCheck struct {
	HTTP             bool          `json:"http,omitempty"`
	Path             string        `json:"path,omitempty"`
	Host             string        `json:"host,omitempty"`
	HTTP2            bool          `json:"http2,omitempty"`
	ExpectedStatuses [][2]int64    `json:"expectedStatuses,omitempty"`
	Interval         time.Duration `json:"interval"`
	Timeout          time.Duration `json:"timeout"`
	Unhealthy        uint32        `json:"unhealthy"`
	Healthy          uint32        `json:"healthy"`
}

// Passes reports whether an HTTP health check's answer is a success.
func (h *HealthCheck) Passes(status int) bool {
	if len(h.ExpectedStatuses) == 0 {
		return status == 200
	}
	for _, r := range h.ExpectedStatuses {
		if int64(status) >= r[0] && int64(status) < r[1] {
			return true
		}
	}
	return false
}

// healthCheckOf reads a cluster's health check: the simulator models one,
// HTTP or TCP (without payloads), with panic mode off, so that with every
// endpoint failing Envoy sends nothing.
func healthCheckOf(c *clusterv3.Cluster) (*HealthCheck, error) {
	checks := c.GetHealthChecks()
	if len(checks) == 0 {
		return nil, nil
	}
	if len(checks) > 1 {
		return nil, errUnsupportedf("more than one health check")
	}
	hc := checks[0]
	if err := understand(hc, "timeout", "interval", "unhealthy_threshold", "healthy_threshold", "http_health_check", "tcp_health_check"); err != nil {
		return nil, err
	}
	out := &HealthCheck{
		Interval: hc.GetInterval().AsDuration(), Timeout: hc.GetTimeout().AsDuration(),
		Unhealthy: hc.GetUnhealthyThreshold().GetValue(), Healthy: hc.GetHealthyThreshold().GetValue(),
	}
	switch {
	case hc.GetHttpHealthCheck() != nil:
		h := hc.GetHttpHealthCheck()
		if err := understand(h, "path", "host", "codec_client_type", "expected_statuses"); err != nil {
			return nil, err
		}
		out.HTTP, out.Path, out.Host, out.HTTP2 = true, h.GetPath(), h.GetHost(), h.GetCodecClientType() == typev3.CodecClientType_HTTP2
		for _, r := range h.GetExpectedStatuses() {
			out.ExpectedStatuses = append(out.ExpectedStatuses, [2]int64{r.GetStart(), r.GetEnd()})
		}
	case hc.GetTcpHealthCheck() != nil:
		if err := understand(hc.GetTcpHealthCheck()); err != nil {
			return nil, err
		}
	default:
		return nil, errUnsupportedf("a health check other than HTTP or TCP")
	}
	if p := c.GetCommonLbConfig().GetHealthyPanicThreshold(); p == nil || p.GetValue() != 0 {
		return nil, errUnsupportedf("health checks with panic mode (healthy_panic_threshold not 0)")
	}
	return out, nil
}

// PickHealthy is Pick among the endpoints healthy says are healthy; ""
// when none is (with panic mode off, Envoy sends nothing).
func (b *Backend) PickHealthy(seed uint64, healthy func(endpoint string) bool) string {
	c := *b
	keep := func(eps []string) []string {
		var out []string
		for _, e := range eps {
			if healthy(e) {
				out = append(out, e)
			}
		}
		return out
	}
	c.Endpoints = keep(b.Endpoints)
	c.Localities = nil
	for _, l := range b.Localities {
		if eps := keep(l.Endpoints); len(eps) > 0 {
			c.Localities = append(c.Localities, Locality{Weight: l.Weight, Endpoints: eps})
		}
	}
	return c.Pick(seed)
}

// HealthChecked are the clusters with a health check, as backends: their
// endpoints, protocol, TLS and check. A cluster still warming (its
// endpoints not served yet) is not among them.
func (s *Simulator) HealthChecked() []Backend {
	var out []Backend
	for name, c := range s.clusters {
		if len(c.GetHealthChecks()) == 0 {
			continue
		}
		b := Backend{Cluster: name, Endpoints: []string{}}
		if err := s.upstream(&b, 503); err != nil || b.HealthCheck == nil {
			continue
		}
		out = append(out, b)
	}
	return out
}

// HealthAddress is where Envoy's health checks of endpoint go: the
// endpoint, or its address at its health port.
func (b *Backend) HealthAddress(endpoint string) string {
	p, ok := b.HealthPorts[endpoint]
	if !ok {
		return endpoint
	}
	host, _, err := net.SplitHostPort(endpoint)
	if err != nil {
		return endpoint
	}
	return net.JoinHostPort(host, strconv.FormatUint(uint64(p), 10))
}
