package harness

import (
	"context"
	"net"
	"net/http"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// HTTPReady runs the HTTP readiness probes of a Pod's containers, as a
// kubelet does, against the Pod's Loopback address, where a process
// playing the Pod listens: the Pod is ready when each answers 2xx or 3xx.
// A container without an HTTP readiness probe is ready once started.
func HTTPReady(ctx context.Context, pod *corev1.Pod) bool {
	for _, c := range pod.Spec.Containers {
		p := c.ReadinessProbe
		if p == nil || p.HTTPGet == nil {
			continue
		}
		port := p.HTTPGet.Port.IntValue()
		if port == 0 {
			for _, cp := range c.Ports {
				if cp.Name == p.HTTPGet.Port.String() {
					port = int(cp.ContainerPort)
				}
			}
		}
		ctx, cancel := context.WithTimeout(ctx, time.Second)
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+net.JoinHostPort(Loopback(pod.Status.PodIP), strconv.Itoa(port))+p.HTTPGet.Path, nil)
		if err != nil {
			cancel()
			return false
		}
		resp, err := http.DefaultClient.Do(req)
		cancel()
		if err != nil {
			return false
		}
		resp.Body.Close()
		if resp.StatusCode < 200 || resp.StatusCode >= 400 {
			return false
		}
	}
	return true
}
