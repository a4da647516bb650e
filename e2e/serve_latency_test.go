package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// How long an HTTPRoute update takes to reach a connected Envoy with 1,000
// routes loaded (ISOBAR_LATENCY_ROUTES sets another number): from the
// update's request to the API server until the ADS client holds the new
// routes; and, for comparison, until a watch of the test's own sees the
// update. Reported, not asserted (no timing thresholds in tests); it fails
// only if an update never arrives. ISOBAR_LATENCY_UNRELATED=N first fills
// another namespace with N Secrets and N ConfigMaps of 10 KiB each, which
// the controller never reads, and ISOBAR_LATENCY_OTHER_ROUTES=N N routes
// of another Gateway: the reported memory shows what they cost it.
func TestServeUpdateLatency(t *testing.T) {
	routes, samples := envInt("ISOBAR_LATENCY_ROUTES", 1000), envInt("ISOBAR_LATENCY_SAMPLES", 20)
	unrelated, others := envInt("ISOBAR_LATENCY_UNRELATED", 0), envInt("ISOBAR_LATENCY_OTHER_ROUTES", 0)
	ns := namespace(t)
	// Each route is an API request of its own: the one-minute context of
	// other tests is too short for 10,000.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute+time.Duration(2*routes+2*unrelated+others)*20*time.Millisecond)
	defer cancel()
	if unrelated > 0 {
		other := createUnrelated(t, ctx, unrelated)
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
	// What the API server alone can do: one status write per route,
	// eight at a time as our writer does, by a plain patch loop (its entry
	// names another controller, so ours has to keep it), with the test's
	// watch on the routes already open, as it is for the controller.
	watched := watchStatuses(t, ctx, controllerName, client.InNamespace(ns))
	cpu := apiServerCPU(t)
	patchTime := patchLoop(t, ctx, ns, routes, patchWorkers)
	loopCPU := apiServerCPU(t) - cpu
	t.Logf("plain status patch loop, %d routes, %d at a time: %s (%.0f writes/s); API server and etcd CPU %s (%s a write)",
		routes, patchWorkers, patchTime.Round(time.Millisecond), float64(routes)/patchTime.Seconds(),
		loopCPU.Round(time.Millisecond), (loopCPU / time.Duration(routes)).Round(time.Microsecond))
	// The clock starts with the controller: building it comes first.
	if _, err := env.Binaries(); err != nil {
		t.Fatal(err)
	}
	started := time.Now()
	cpu = apiServerCPU(t)
	s := serve(t, ns, "web", nil, "--profiling")
	stopProfile := profileCPU(t, s, "status", 20)
	// Every route's status, written by the controller as it starts.
	select {
	case <-watched.all(routes):
	case <-time.After(10 * time.Minute):
		t.Fatalf("only %d of %d route statuses written after 10 minutes", watched.count(), routes)
	}
	converged := time.Since(started)
	writerCPU := apiServerCPU(t) - cpu
	stopProfile()
	t.Logf("controller start -> every one of %d route statuses written: %s (%.2fx the patch loop's time)",
		routes, converged.Round(time.Millisecond), converged.Seconds()/patchTime.Seconds())
	// What the start costs before the writer's first write (the build of
	// the binary excluded), and the writer's own pace after it.
	first := watched.first().Sub(started)
	t.Logf("controller start -> first route status: %s; first -> last: %s (%.0f writes/s, %.2fx the patch loop's time)",
		first.Round(time.Millisecond), (converged - first).Round(time.Millisecond),
		float64(routes)/(converged-first).Seconds(), (converged-first).Seconds()/patchTime.Seconds())
	m := scrape(t, s.metrics)
	t.Logf("the writer's route status reads %.0f, writes %.0f, for %d routes; API server and etcd CPU from the controller's start %s (%s a route)",
		m[`isobar_status_checks_total{kind="HTTPRoute"}`], m[`isobar_status_writes_total{kind="HTTPRoute"}`], routes,
		writerCPU.Round(time.Millisecond), (writerCPU / time.Duration(routes)).Round(time.Microsecond))
	updates := connectRoutes(t, ctx, s, ns, "web", routes)
	updates.watch = watched

	// A status pass reads only the routes a translation changed (and
	// those someone else touched): once the writer has settled, each
	// update costs a few reads, not one per route.
	const checks = `isobar_status_checks_total{kind="HTTPRoute"}`
	checksBefore := steady(t, s.metrics, checks, 3*time.Second)
	stopProfile = profileCPU(t, s, "updates", 10)
	stagesBefore := scrape(t, s.metrics)
	latencies := updates.run(samples, 1)
	stopProfile()
	stages := stageMeans(stagesBefore, scrape(t, s.metrics))
	checked := steady(t, s.metrics, checks, time.Second) - checksBefore
	t.Logf("route statuses read by the writer during the %d updates: %.0f", samples, checked)
	if checked > float64(4*samples) {
		t.Errorf("the status writer read %.0f route statuses for %d one-route updates: it rechecks routes that did not change", checked, samples)
	}
	t.Logf("HTTPRoute update -> ADS client, %d routes loaded, --update-delay 10ms: median %s, p99 %s, min %s, max %s over %d updates",
		routes, percentile(latencies, 50), percentile(latencies, 99), latencies[0], latencies[samples-1], samples)
	t.Logf("the same updates -> the test's own watch event (the API server's part): median %s, p99 %s",
		percentile(updates.apiServer, 50), percentile(updates.apiServer, 99))
	t.Logf("the controller's part of each update, mean over its passes (isobar_update_stage_seconds): %s; the rest is the watch event's way to the controller and the stream's to the ADS client", stages)
	if rss, peak, err := memory(s.proc.PID()); err == nil {
		t.Logf("controller memory with %d routes: RSS %d MiB now, peak %d MiB", routes, rss>>20, peak>>20)
	}
	// Where the RSS goes, by the Go runtime's account.
	m = scrape(t, s.metrics)
	t.Logf("controller Go memory: heap in use %.0f MiB, next GC at %.0f MiB, heap idle %.0f MiB of which released %.0f MiB, from the OS in all %.0f MiB",
		m["go_memstats_heap_inuse_bytes"]/(1<<20), m["go_memstats_next_gc_bytes"]/(1<<20), m["go_memstats_heap_idle_bytes"]/(1<<20),
		m["go_memstats_heap_released_bytes"]/(1<<20), m["go_memstats_sys_bytes"]/(1<<20))
	if dir := os.Getenv("ISOBAR_HEAP_PROFILE"); dir != "" {
		saveHeapProfile(t, s, filepath.Join(dir, fmt.Sprintf("controller-heap-%d.pprof", routes)))
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

// stageMeans is the mean of each stage of isobar_update_stage_seconds
// between two scrapes, as "stage 1.2ms, ...", with the number of passes.
func stageMeans(before, after map[string]float64) string {
	var parts []string
	passes := 0.0
	for _, stage := range []string{"batch", "snapshot", "translate", "xds"} {
		label := `{stage="` + stage + `"}`
		n := after["isobar_update_stage_seconds_count"+label] - before["isobar_update_stage_seconds_count"+label]
		sum := after["isobar_update_stage_seconds_sum"+label] - before["isobar_update_stage_seconds_sum"+label]
		if n == 0 {
			parts = append(parts, stage+" (no pass)")
			continue
		}
		passes = max(passes, n)
		parts = append(parts, fmt.Sprintf("%s %s", stage, time.Duration(sum/n*float64(time.Second)).Round(10*time.Microsecond)))
	}
	return fmt.Sprintf("%s (%.0f passes)", strings.Join(parts, ", "), passes)
}
