package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// How long an HTTPRoute update takes to reach a connected Envoy with 1,000
// routes loaded (ISOBAR_LATENCY_ROUTES sets another number): from the
// update's request to the API server until the ADS client holds the new
// routes. Reported, not asserted (no timing thresholds in tests); it fails
// only if an update never arrives. ISOBAR_LATENCY_UNRELATED=N first fills
// another namespace with N Secrets and N ConfigMaps of 10 KiB each, which
// the controller never reads, and ISOBAR_LATENCY_OTHER_ROUTES=N N routes
// of another Gateway: the reported memory shows what they cost it.
func TestServeUpdateLatency(t *testing.T) {
	routes, samples := 1000, 20
	if n, err := strconv.Atoi(os.Getenv("ISOBAR_LATENCY_ROUTES")); err == nil && n > 0 {
		routes = n
	}
	unrelated, _ := strconv.Atoi(os.Getenv("ISOBAR_LATENCY_UNRELATED"))
	others, _ := strconv.Atoi(os.Getenv("ISOBAR_LATENCY_OTHER_ROUTES"))
	ns := namespace(t)
	// Creating the routes takes about 5 ms each here: the one-minute
	// context of other tests is too short for 10,000.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute+time.Duration(routes+2*unrelated+others)*20*time.Millisecond)
	defer cancel()
	if unrelated > 0 {
		other := namespace(t)
		value := strings.Repeat("x", 10<<10)
		createAll(t, unrelated, func(i int) error {
			meta := metav1.ObjectMeta{Namespace: other, Name: fmt.Sprintf("unrelated-%d", i)}
			if err := env.Client.Create(ctx, &corev1.Secret{ObjectMeta: meta, StringData: map[string]string{"data": value}}); err != nil {
				return err
			}
			return env.Client.Create(ctx, &corev1.ConfigMap{ObjectMeta: meta, Data: map[string]string{"data": value}})
		})
		t.Logf("%d unrelated Secrets and %d ConfigMaps of 10 KiB in namespace %s", unrelated, unrelated, other)
	}
	if others > 0 {
		other := namespace(t)
		fleet(t, ctx, other, "other")
		createAll(t, others, func(i int) error {
			r := httpRoute(other, fmt.Sprintf("route-%d", i), "app", "other")
			r.Spec.Hostnames = []gatewayv1.Hostname{gatewayv1.Hostname(fmt.Sprintf("other-%d.example.com", i))}
			r.Spec.Rules[0].Matches = []gatewayv1.HTTPRouteMatch{{Path: &gatewayv1.HTTPPathMatch{Value: ptr.To(fmt.Sprintf("/r%d", i))}}}
			return env.Client.Create(ctx, r)
		})
		t.Logf("%d routes of Gateway %s/other", others, other)
	}
	fleet(t, ctx, ns, "web")
	backend(t, ctx, ns, "app", "10.1.2.3")
	createAll(t, routes, func(i int) error {
		r := httpRoute(ns, fmt.Sprintf("route-%d", i), "app", "web")
		r.Spec.Hostnames = []gatewayv1.Hostname{gatewayv1.Hostname(fmt.Sprintf("app-%d.example.com", i))}
		r.Spec.Rules[0].Matches = []gatewayv1.HTTPRouteMatch{{Path: &gatewayv1.HTTPPathMatch{Value: ptr.To(fmt.Sprintf("/r%d", i))}}}
		return env.Client.Create(ctx, r)
	})
	started := time.Now()
	s := serve(t, ns, "web", nil, "--profiling")
	// Every route's status, written by the controller as it starts.
	eventually(t, 10*time.Minute, "every route's status entry", func() bool {
		var list gatewayv1.HTTPRouteList
		if err := env.Client.List(ctx, &list, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		for i := range list.Items {
			if routeParent(&list.Items[i], "web") == nil {
				return false
			}
		}
		return len(list.Items) == routes
	})
	t.Logf("controller start -> every one of %d route statuses written: %s", routes, time.Since(started).Round(time.Millisecond))
	ads := newADSClient(t, dialXDS(t, s.pki, s.xds), "envoy-0", ns+"/web", resourcev3.RouteType)
	// await answers responses until one satisfies ok.
	await := func(ok func(*discoveryv3.DiscoveryResponse) bool) {
		for {
			r := ads.next(resourcev3.RouteType, 60*time.Second)
			ads.ack(r)
			if ok(r) {
				return
			}
		}
	}
	await(func(r *discoveryv3.DiscoveryResponse) bool { return len(virtualHosts(t, r)) >= routes })

	latencies := make([]time.Duration, 0, samples)
	for k := range samples {
		path := fmt.Sprintf("/v%d", k)
		start := time.Now()
		err := retry.RetryOnConflict(retry.DefaultBackoff, func() error {
			r := &gatewayv1.HTTPRoute{}
			if err := env.Client.Get(ctx, keyOf(ns, "route-0"), r); err != nil {
				return err
			}
			r.Spec.Rules[0].Matches[0].Path.Value = ptr.To(path)
			return env.Client.Update(ctx, r)
		})
		if err != nil {
			t.Fatal(err)
		}
		await(func(r *discoveryv3.DiscoveryResponse) bool {
			for _, vh := range virtualHosts(t, r) {
				if vh.Name == "app-0.example.com" {
					return slices.ContainsFunc(vh.Routes, func(rt *routev3.Route) bool {
						return rt.GetMatch().GetPathSeparatedPrefix() == path || rt.GetMatch().GetPath() == path
					})
				}
			}
			return false
		})
		latencies = append(latencies, time.Since(start))
	}
	slices.Sort(latencies)
	t.Logf("HTTPRoute update -> ADS client, %d routes loaded, --update-delay 10ms: median %s, min %s, max %s over %d updates",
		routes, latencies[samples/2], latencies[0], latencies[samples-1], samples)
	if rss, peak, err := memory(s.proc.PID()); err == nil {
		t.Logf("controller memory with %d routes: RSS %d MiB now, peak %d MiB", routes, rss>>20, peak>>20)
	}
	if dir := os.Getenv("ISOBAR_HEAP_PROFILE"); dir != "" {
		// For go tool pprof: where the live heap is.
		resp, err := http.Get(strings.TrimSuffix(s.metrics, "/metrics") + "/debug/pprof/heap?gc=1")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		data, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("controller-heap-%d.pprof", routes)), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// createAll runs create(i) for i in [0, n) on four workers, failing the
// test on the first error.
func createAll(t *testing.T, n int, create func(i int) error) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += 4 {
				if err := create(i); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// memory reads a process's resident set size and its peak from
// /proc/PID/status (Linux), in bytes.
func memory(pid int) (rss, peak int64, err error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, err
	}
	for _, line := range strings.Split(string(data), "\n") {
		var kb int64
		if _, err := fmt.Sscanf(line, "VmRSS: %d kB", &kb); err == nil {
			rss = kb << 10
		}
		if _, err := fmt.Sscanf(line, "VmHWM: %d kB", &kb); err == nil {
			peak = kb << 10
		}
	}
	return rss, peak, nil
}

func virtualHosts(t *testing.T, r *discoveryv3.DiscoveryResponse) []*routev3.VirtualHost {
	var out []*routev3.VirtualHost
	for _, rc := range resources[routev3.RouteConfiguration](t, r) {
		out = append(out, rc.VirtualHosts...)
	}
	return out
}
