package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// patchWorkers is how many status writes the plain patch loop keeps in
// flight: as many as the controller's status writer does, so that the two
// are compared on the same terms.
const patchWorkers = 8

// patchLoop writes one status entry of another controller into each of
// the n routes route-0 ... route-(n-1) of ns, workers at a time, and
// returns how long it took: the API server's own status write throughput,
// the bound for ours.
func patchLoop(t *testing.T, ctx context.Context, ns string, n, workers int) time.Duration {
	t.Helper()
	now := metav1.Now().UTC().Format(time.RFC3339)
	start := time.Now()
	forEach(t, n, workers, func(i int) error {
		patch := fmt.Sprintf(`{"status":{"parents":[{"parentRef":{"name":"elsewhere"},"controllerName":"example.com/patch-loop",`+
			`"conditions":[{"type":"Accepted","status":"True","reason":"Accepted","message":"%d","lastTransitionTime":%q}]}]}}`, i, now)
		r := &gatewayv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("route-%d", i)}}
		return env.Client.Status().Patch(ctx, r, client.RawPatch(types.MergePatchType, []byte(patch)))
	})
	return time.Since(start)
}

// createAll runs create(i) for i in [0, n) on four workers, failing the
// test on the first error.
func createAll(t *testing.T, n int, create func(i int) error) {
	t.Helper()
	forEach(t, n, 4, create)
}

// forEach runs do(i) for i in [0, n) on workers goroutines, failing the
// test on the first error.
func forEach(t *testing.T, n, workers int, do func(i int) error) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += workers {
				if err := do(i); err != nil {
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

// createUnrelated fills a new namespace with n Secrets and n ConfigMaps of
// 10 KiB each that no Gateway uses, and returns it.
func createUnrelated(t *testing.T, ctx context.Context, n int) string {
	t.Helper()
	ns := namespace(t)
	value := strings.Repeat("x", 10<<10)
	createAll(t, n, func(i int) error {
		meta := metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("unrelated-%d", i)}
		if err := env.Client.Create(ctx, &corev1.Secret{ObjectMeta: meta, StringData: map[string]string{"data": value}}); err != nil {
			return err
		}
		return env.Client.Create(ctx, &corev1.ConfigMap{ObjectMeta: meta, Data: map[string]string{"data": value}})
	})
	return ns
}

// routeUpdates times HTTPRoute updates from the request to the API server
// until an ADS client of the controller receives routes with the change
// (received: decoding the routes is the client's work, not the
// controller's).
type routeUpdates struct {
	t   *testing.T
	ctx context.Context
	ns  string
	ads *adsClient
	// watch, when set, is a watch of the test's own on the routes: run
	// then also times each update to its watch event (apiServer), the
	// part of the latency that is the API server's, not the
	// controller's.
	watch     *statusWatch
	apiServer []time.Duration
}

// connectRoutes connects an ADS client to c for ns/gateway and waits
// until it holds at least routes virtual hosts.
func connectRoutes(t *testing.T, ctx context.Context, c *served, ns, gateway string, routes int) *routeUpdates {
	t.Helper()
	u := &routeUpdates{t: t, ctx: ctx, ns: ns, ads: newADSClient(t, dialXDS(t, c.pki, c.xds), "envoy-0", ns+"/"+gateway, resourcev3.RouteType)}
	u.await(func(r *discoveryv3.DiscoveryResponse) bool { return len(virtualHosts(t, r)) >= routes })
	return u
}

// await answers responses until one satisfies ok, and returns when that
// one arrived.
func (u *routeUpdates) await(ok func(*discoveryv3.DiscoveryResponse) bool) time.Time {
	for {
		r := u.ads.next(resourcev3.RouteType, 60*time.Second)
		u.ads.ack(r)
		if ok(r) {
			return u.ads.received(r)
		}
	}
}

// run updates route-0 ... route-(routes-1) in turn, samples times, each
// to a new path of its first match, and returns the latencies sorted.
func (u *routeUpdates) run(samples, routes int) []time.Duration {
	t := u.t
	t.Helper()
	out := make([]time.Duration, 0, samples)
	for k := range samples {
		name, path := fmt.Sprintf("route-%d", k%routes), fmt.Sprintf("/v%d", k)
		// The clock starts at the write: the read before it is the
		// test's.
		var start time.Time
		r := &gatewayv1.HTTPRoute{}
		err := retry.RetryOnConflict(retry.DefaultBackoff, func() error {
			if err := env.Client.Get(u.ctx, keyOf(u.ns, name), r); err != nil {
				return err
			}
			r.Spec.Rules[0].Matches[0].Path.Value = ptr.To(path)
			start = time.Now()
			return env.Client.Update(u.ctx, r)
		})
		if err != nil {
			t.Fatal(err)
		}
		arrived := u.await(func(r *discoveryv3.DiscoveryResponse) bool {
			return slices.ContainsFunc(virtualHosts(t, r), func(vh *routev3.VirtualHost) bool {
				return slices.ContainsFunc(vh.Routes, func(rt *routev3.Route) bool {
					return rt.GetMatch().GetPathSeparatedPrefix() == path || rt.GetMatch().GetPath() == path
				})
			})
		})
		out = append(out, arrived.Sub(start))
		if u.watch != nil {
			u.apiServer = append(u.apiServer, u.watch.arrival(t, r.ResourceVersion).Sub(start))
		}
	}
	slices.Sort(out)
	slices.Sort(u.apiServer)
	return out
}

// percentile is the p-th percentile of sorted durations.
func percentile(sorted []time.Duration, p int) time.Duration {
	return sorted[(len(sorted)*p+99)/100-1]
}

// statusWatch follows, through one watch, which HTTPRoutes carry an entry
// of controller's for their first parent: listing thousands of routes again
// and again would load the API server whose throughput is being measured.
type statusWatch struct {
	controller string
	mu         sync.Mutex
	written    map[string]bool
	// arrived is when each resourceVersion's event came.
	arrived map[string]time.Time
	// firstWritten is when the first status of ours came.
	firstWritten time.Time
	changed      chan struct{}
}

func watchStatuses(t *testing.T, ctx context.Context, controller string, opts ...client.ListOption) *statusWatch {
	t.Helper()
	c, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Client.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	w := &statusWatch{controller: controller, written: map[string]bool{}, arrived: map[string]time.Time{}, changed: make(chan struct{}, 1)}
	ctx, cancel := context.WithCancel(ctx)
	t.Cleanup(cancel)
	var list gatewayv1.HTTPRouteList
	if err := c.List(ctx, &list, opts...); err != nil {
		t.Fatal(err)
	}
	for i := range list.Items {
		w.saw(&list.Items[i])
	}
	version := list.ResourceVersion
	go func() {
		for ctx.Err() == nil {
			wi, err := c.Watch(ctx, &gatewayv1.HTTPRouteList{}, append(opts, &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: version}})...)
			if err != nil {
				time.Sleep(100 * time.Millisecond)
				continue
			}
			for ev := range wi.ResultChan() {
				if r, ok := ev.Object.(*gatewayv1.HTTPRoute); ok && ev.Type != watch.Error {
					version = r.ResourceVersion
					w.saw(r)
				}
			}
		}
	}()
	return w
}

func (w *statusWatch) saw(r *gatewayv1.HTTPRoute) {
	written := false
	if len(r.Spec.ParentRefs) > 0 {
		for _, p := range r.Status.Parents {
			written = written || p.ControllerName == gatewayv1.GatewayController(w.controller) && p.ParentRef.Name == r.Spec.ParentRefs[0].Name
		}
	}
	w.mu.Lock()
	w.written[r.Namespace+"/"+r.Name] = written
	w.arrived[r.ResourceVersion] = time.Now()
	if written && w.firstWritten.IsZero() {
		w.firstWritten = time.Now()
	}
	w.mu.Unlock()
	select {
	case w.changed <- struct{}{}:
	default:
	}
}

// arrival returns when the watch saw resourceVersion version, waiting for
// it up to a minute.
func (w *statusWatch) arrival(t *testing.T, version string) time.Time {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		w.mu.Lock()
		at, ok := w.arrived[version]
		w.mu.Unlock()
		if ok {
			return at
		}
		time.Sleep(time.Millisecond)
	}
	t.Fatalf("the test's watch never saw resourceVersion %s", version)
	return time.Time{}
}

// count is how many routes carry our entry now.
func (w *statusWatch) count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, ok := range w.written {
		if ok {
			n++
		}
	}
	return n
}

// first returns when the first status of ours came.
func (w *statusWatch) first() time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.firstWritten
}

// all is closed once n routes carry our entry.
func (w *statusWatch) all(n int) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		for w.count() < n {
			<-w.changed
		}
		close(done)
	}()
	return done
}

// profileCPU saves the controller's CPU profile over the next seconds (at
// most) to ISOBAR_CPU_PROFILE/controller-cpu-NAME.pprof when that is set;
// the returned stop waits for it. The controller must run with
// --profiling.
func profileCPU(t *testing.T, s *served, name string, seconds int) (stop func()) {
	dir := os.Getenv("ISOBAR_CPU_PROFILE")
	if dir == "" {
		return func() {}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		url := fmt.Sprintf("%s/debug/pprof/profile?seconds=%d", strings.TrimSuffix(s.metrics, "/metrics"), seconds)
		resp, err := http.Get(url)
		if err != nil {
			t.Error(err)
			return
		}
		defer resp.Body.Close()
		data, err := io.ReadAll(resp.Body)
		if err == nil {
			err = os.WriteFile(filepath.Join(dir, "controller-cpu-"+name+".pprof"), data, 0o644)
		}
		if err != nil {
			t.Error(err)
		}
	}()
	return func() { <-done }
}

// saveHeapProfile saves the controller's heap profile, after a garbage
// collection, to path: for go tool pprof, where the live heap is. The
// controller must run with --profiling.
func saveHeapProfile(t *testing.T, c *served, path string) {
	t.Helper()
	resp, err := http.Get(strings.TrimSuffix(c.metrics, "/metrics") + "/debug/pprof/heap?gc=1")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err == nil {
		err = os.WriteFile(path, data, 0o644)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// apiServerCPU is the CPU time the test's kube-apiserver and etcd (its
// children) have used so far, to tell the API server's share of a status
// write. Zero where /proc cannot tell (not Linux).
func apiServerCPU(t *testing.T) time.Duration {
	t.Helper()
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	var ticks int64
	for _, path := range stats {
		data, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		// pid (comm) state ppid ... utime stime: fields 14 and 15, counted
		// after the command, which may hold spaces.
		s := string(data)
		open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
		if open < 0 || end < open {
			continue
		}
		if comm := s[open+1 : end]; comm != "kube-apiserver" && comm != "etcd" {
			continue
		}
		f := strings.Fields(s[end+1:])
		if len(f) < 13 || f[1] != fmt.Sprint(os.Getpid()) {
			continue
		}
		var utime, stime int64
		_, _ = fmt.Sscan(f[11], &utime)
		_, _ = fmt.Sscan(f[12], &stime)
		ticks += utime + stime
	}
	// The kernel counts in USER_HZ, 100 on Linux.
	return time.Duration(ticks) * 10 * time.Millisecond
}
