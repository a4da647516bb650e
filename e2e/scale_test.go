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

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"isobar.dev/e2e/harness"
)

// What a cluster of many Gateways costs each of their controllers and the
// operator: G Gateways (ISOBAR_SCALE_GATEWAYS, 2 by default), each in its
// own namespace with ISOBAR_SCALE_ROUTES HTTPRoutes (100) to
// ISOBAR_SCALE_SERVICES Services (10) with an EndpointSlice of three
// endpoints each, beside ISOBAR_SCALE_UNRELATED Secrets and ConfigMaps of
// 10 KiB (none) that no Gateway uses. One controller process per Gateway,
// with leader election, as the operator provisions them, and the operator
// itself.
//
// It reports per controller: RSS and live heap, API requests per second
// while idle and while another Gateway's routes change, the time from
// starting every controller to every route's status, and the update
// latency to a connected ADS client; the API server's watch streams per
// controller (meaningful when the test runs alone). It fails if a status
// is never written, or if a change to one Gateway's routes makes another
// Gateway's controller translate. Timings are reported, not asserted.
func TestScaleGateways(t *testing.T) {
	gateways := envInt("ISOBAR_SCALE_GATEWAYS", 2)
	perGateway := envInt("ISOBAR_SCALE_ROUTES", 100)
	services := envInt("ISOBAR_SCALE_SERVICES", 10)
	unrelated := envInt("ISOBAR_SCALE_UNRELATED", 0)
	samples := envInt("ISOBAR_SCALE_SAMPLES", 10)
	idle := time.Duration(envInt("ISOBAR_SCALE_IDLE_SECONDS", 10)) * time.Second
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute+time.Duration(gateways*(perGateway+services)+2*unrelated)*20*time.Millisecond)
	defer cancel()

	namespaces := make([]string, gateways)
	for i := range namespaces {
		namespaces[i] = namespace(t)
	}
	// A controller name of its own: the operator provisions this test's
	// Gateways and no other test's.
	controller := "isobar.dev/scale-" + namespaces[0]
	label := map[string]string{"isobar.dev/scale": namespaces[0]}
	class := &gatewayv1.GatewayClass{ObjectMeta: metav1.ObjectMeta{Name: "scale-" + namespaces[0]}, Spec: gatewayv1.GatewayClassSpec{ControllerName: gatewayv1.GatewayController(controller)}}
	create(t, ctx, class)
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), class) })
	if unrelated > 0 {
		createUnrelated(t, ctx, unrelated)
	}
	for _, ns := range namespaces {
		create(t, ctx,
			&gatewayv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "gw"}, Spec: gatewayv1.GatewaySpec{
				GatewayClassName: gatewayv1.ObjectName(class.Name),
				Listeners:        []gatewayv1.Listener{{Name: "http", Protocol: gatewayv1.HTTPProtocolType, Port: 80}},
			}},
			&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "gw-envoy"}, Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 80}}}})
	}
	createAll(t, gateways*services, func(i int) error {
		ns, name := namespaces[i%gateways], fmt.Sprintf("svc-%d", i/gateways)
		// Headless: the test API server's Service range has 256 addresses,
		// and translation reads the EndpointSlices alone.
		if err := env.Client.Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone, Ports: []corev1.ServicePort{{Name: "http", Port: 8080}}}}); err != nil {
			return err
		}
		return env.Client.Create(ctx, &discoveryv1.EndpointSlice{
			ObjectMeta:  metav1.ObjectMeta{Namespace: ns, Name: name + "-1", Labels: map[string]string{discoveryv1.LabelServiceName: name}},
			AddressType: discoveryv1.AddressTypeIPv4,
			Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("http"), Port: ptr.To[int32](8080)}},
			Endpoints: []discoveryv1.Endpoint{
				{Addresses: []string{fmt.Sprintf("10.1.%d.1", i%250)}}, {Addresses: []string{fmt.Sprintf("10.1.%d.2", i%250)}}, {Addresses: []string{fmt.Sprintf("10.1.%d.3", i%250)}},
			},
		})
	})
	createAll(t, gateways*perGateway, func(i int) error {
		g, k := i%gateways, i/gateways
		r := httpRoute(namespaces[g], fmt.Sprintf("route-%d", k), fmt.Sprintf("svc-%d", k%services), "gw")
		r.Labels = label
		r.Spec.Hostnames = []gatewayv1.Hostname{gatewayv1.Hostname(fmt.Sprintf("r%d.g%d.example.com", k, g))}
		r.Spec.Rules[0].Matches = []gatewayv1.HTTPRouteMatch{{Path: &gatewayv1.HTTPPathMatch{Value: ptr.To(fmt.Sprintf("/r%d", k))}}}
		return env.Client.Create(ctx, r)
	})
	t.Logf("%d Gateways, each with %d HTTPRoutes and %d Services; %d unrelated Secrets and ConfigMaps", gateways, perGateway, services, unrelated)

	kubeconfig, err := env.Kubeconfig("isobar-controller")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := env.Binaries(); err != nil {
		t.Fatal(err)
	}
	watched := watchStatuses(t, ctx, controller, client.MatchingLabels(label))
	watchesBefore := apiserverWatches(t, ctx)
	opStarted := time.Now()
	op := startOperator(t, controller)
	// The operator provisions every fleet before the controllers start:
	// their watches and requests are counted from here.
	opRequests := steadyWithin(t, op.metrics, "rest_client_requests_total", 5*time.Second, 10*time.Minute)
	t.Logf("operator: %d fleets provisioned with %.0f API requests, quiet for 5 s at %s after its start",
		gateways, opRequests, time.Since(opStarted).Round(time.Second))
	watchesOperator := apiserverWatches(t, ctx)

	// Every controller at once, as after an upgrade of the operator.
	started := time.Now()
	ctls := make([]*served, gateways)
	var wg sync.WaitGroup
	for i, ns := range namespaces {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctls[i] = startController(t, kubeconfig, ns, "gw", nil, "--profiling", "--controller-name", controller, "--leader-elect")
		}()
	}
	wg.Wait()
	all, deadline := watched.all(gateways*perGateway), time.After(10*time.Minute)
	for done := false; !done; {
		select {
		case <-all:
			done = true
		case <-deadline:
			t.Fatalf("only %d of %d route statuses written after 10 minutes", watched.count(), gateways*perGateway)
		case <-time.After(time.Second):
			for i, c := range ctls {
				if exited, err := c.proc.Exited(); exited {
					t.Fatalf("the controller of Gateway %d exited (%v):\n%s", i, err, c.proc.Output())
				}
			}
		}
	}
	converged := time.Since(started)
	for _, c := range ctls {
		waitReady(t, c.proc, c.health+"/readyz", time.Minute)
	}

	// Idle: what the controllers ask of the API server when nothing
	// changes, after a pause for the last status writes to come back.
	time.Sleep(5 * time.Second)
	before := requestCounts(t, ctls)
	opBefore := scrapeSum(t, op.metrics, "rest_client_requests_total")
	time.Sleep(idle)
	idleRates := rates(requestCounts(t, ctls), before, idle)
	opIdle := (scrapeSum(t, op.metrics, "rest_client_requests_total") - opBefore) / idle.Seconds()
	watches := apiserverWatches(t, ctx) - watchesOperator

	// A status write to the class (anyone's: the class reconciler's own)
	// must not send the operator through every fleet of the class.
	passes := operatorGatewayPasses(t, op)
	err = retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		c := &gatewayv1.GatewayClass{}
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(class), c); err != nil {
			return err
		}
		meta.SetStatusCondition(&c.Status.Conditions, metav1.Condition{Type: "example.com/Touched", Status: metav1.ConditionTrue, Reason: "Test", ObservedGeneration: c.Generation})
		return env.Client.Status().Update(ctx, c)
	})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * time.Second)
	if n := operatorGatewayPasses(t, op) - passes; n >= float64(gateways) {
		t.Errorf("a status write to the GatewayClass took the operator through %v Gateway passes (%d Gateways)", n, gateways)
	}

	// A change: Gateway 0's routes updated, one at a time, each awaited
	// at an ADS client of its controller. The others must not translate.
	translations := make([]float64, gateways)
	for i, c := range ctls {
		translations[i] = scrape(t, c.metrics)["isobar_translation_seconds_count"]
	}
	before = requestCounts(t, ctls)
	changeStart := time.Now()
	latencies := connectRoutes(t, ctx, ctls[0], namespaces[0], "gw", perGateway).run(samples, perGateway)
	changing := time.Since(changeStart)
	changeRates := rates(requestCounts(t, ctls), before, changing)
	// A few translations may come from elsewhere (the namespaces of
	// earlier tests, going away, are inputs); one per update would say
	// that other Gateways' route changes reach every controller.
	others := 0.0
	for i, c := range ctls[1:] {
		n := scrape(t, c.metrics)["isobar_translation_seconds_count"] - translations[i+1]
		others += n
		if 2*n >= float64(samples) {
			t.Errorf("the controller of Gateway %d translated %v times while only Gateway 0's routes changed %d times", i+1, n, samples)
		}
	}

	if dir := os.Getenv("ISOBAR_HEAP_PROFILE"); dir != "" {
		saveHeapProfile(t, ctls[0], filepath.Join(dir, fmt.Sprintf("controller-heap-g%d.pprof", gateways)))
	}
	rss, heap := make([]float64, gateways), make([]float64, gateways)
	for i, c := range ctls {
		r, _, err := memory(c.proc.PID())
		if err != nil {
			t.Fatal(err)
		}
		rss[i], heap[i] = float64(r)/(1<<20), liveHeap(t, c)/(1<<20)
	}
	opRSS, _, err := memory(op.proc.PID())
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(rss)
	slices.Sort(heap)
	t.Logf("controller start -> all %d route statuses written: %s", gateways*perGateway, converged.Round(time.Millisecond))
	t.Logf("per controller: RSS median %.0f MiB (min %.0f, max %.0f); live heap median %.1f MiB (max %.1f)", rss[gateways/2], rss[0], rss[gateways-1], heap[gateways/2], heap[gateways-1])
	t.Logf("per controller: API requests/s idle median %.2f (max %.2f); while Gateway 0's routes change: Gateway 0 %.2f, others median %.2f (max %.2f)",
		median(idleRates), slices.Max(idleRates), changeRates[0], median(changeRates[1:]), maxOr0(changeRates[1:]))
	t.Logf("API server watch streams added by the controllers: %.0f (%.1f per controller); by the operator: %.0f", watches, watches/float64(gateways), watchesOperator-watchesBefore)
	t.Logf("HTTPRoute update -> ADS client of Gateway 0: p50 %s, p99 %s over %d updates", percentile(latencies, 50), percentile(latencies, 99), len(latencies))
	t.Logf("translations by the other %d controllers during Gateway 0's %d updates: %.0f", gateways-1, samples, others)
	t.Logf("operator: RSS %d MiB, API requests/s idle %.2f", opRSS>>20, opIdle)
}

// envInt is the positive integer in the environment variable name, or def.
func envInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	return def
}

type runningOperator struct {
	proc    *harness.Process
	metrics string
}

// startOperator runs the operator for controller's classes with its
// metrics served.
func startOperator(t *testing.T, controller string) *runningOperator {
	t.Helper()
	kubeconfig, err := env.Kubeconfig("isobar-operator")
	if err != nil {
		t.Fatal(err)
	}
	bin, err := env.Binaries()
	if err != nil {
		t.Fatal(err)
	}
	health, metrics := harness.FreePortString(t), harness.FreePortString(t)
	op, err := harness.StartProcessEnv(env.Dir, []string{"KUBECONFIG=" + kubeconfig}, bin+"/isobar-operator", "--controller-name="+controller,
		"--health-probe-bind-address=127.0.0.1:"+health, "--metrics-bind-address=127.0.0.1:"+metrics, "--log-format=console")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if code, err := op.Stop(20 * time.Second); err != nil || code != 0 {
			t.Errorf("isobar-operator stopped with code %d, %v\n%s", code, err, op.Output())
		}
	})
	waitReady(t, op, "http://127.0.0.1:"+health+"/readyz", 30*time.Second)
	return &runningOperator{proc: op, metrics: "http://127.0.0.1:" + metrics + "/metrics"}
}

// requestCounts are the API requests each controller has made, by its
// client's own count.
func requestCounts(t *testing.T, ctls []*served) []float64 {
	out := make([]float64, len(ctls))
	for i, c := range ctls {
		out[i] = scrapeSum(t, c.metrics, "rest_client_requests_total")
	}
	return out
}

func rates(after, before []float64, d time.Duration) []float64 {
	out := make([]float64, len(after))
	for i := range after {
		out[i] = (after[i] - before[i]) / d.Seconds()
	}
	return out
}

// liveHeap is the controller's heap after a garbage collection, which its
// heap profile endpoint runs.
func liveHeap(t *testing.T, c *served) float64 {
	resp, err := http.Get(strings.TrimSuffix(c.metrics, "/metrics") + "/debug/pprof/heap?gc=1")
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return scrape(t, c.metrics)["go_memstats_heap_alloc_bytes"]
}

// apiserverWatches is how many watch requests the API server is serving.
func apiserverWatches(t *testing.T, ctx context.Context) float64 {
	cs, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	body, err := cs.RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, line := range strings.Split(string(body), "\n") {
		if strings.HasPrefix(line, "apiserver_longrunning_requests{") && strings.Contains(line, `verb="WATCH"`) {
			if v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64); err == nil {
				sum += v
			}
		}
	}
	return sum
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}

func maxOr0(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	return slices.Max(v)
}

// operatorGatewayPasses counts the operator's passes over Gateways.
func operatorGatewayPasses(t *testing.T, op *runningOperator) float64 {
	t.Helper()
	var n float64
	for k, v := range scrape(t, op.metrics) {
		if strings.HasPrefix(k, `controller_runtime_reconcile_total{controller="gateway",`) {
			n += v
		}
	}
	return n
}
