package e2e

import (
	"context"
	"io"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"isobar.dev/e2e/harness"
)

const controllerName = "isobar.dev/gateway-controller"

// xdsTypes are what an Envoy with HTTP listeners subscribes to.
var xdsTypes = []string{resourcev3.ListenerType, resourcev3.ClusterType, resourcev3.EndpointType, resourcev3.RouteType}

// served is a running `isobar-controller serve` for one Gateway.
type served struct {
	proc    *harness.Process
	pki     *harness.PKI
	xds     string
	metrics string // the Prometheus endpoint's URL
	health  string // the health probes' base URL
}

// serve starts the built controller for ns/gateway (controllerName mode
// for "") and waits until it is ready. A nil pki gets a fresh one.
func serve(t *testing.T, ns, gateway string, pki *harness.PKI, extra ...string) *served {
	t.Helper()
	kubeconfig, err := env.Kubeconfig("isobar-controller")
	if err != nil {
		t.Fatal(err)
	}
	return serveWith(t, kubeconfig, ns, gateway, pki, extra...)
}

// serveWith is serve with the given kubeconfig.
func serveWith(t *testing.T, kubeconfig, ns, gateway string, pki *harness.PKI, extra ...string) *served {
	t.Helper()
	s := startController(t, kubeconfig, ns, gateway, pki, extra...)
	waitReady(t, s.proc, s.health+"/readyz", 60*time.Second)
	return s
}

// startController starts the built controller, without waiting for it.
func startController(t *testing.T, kubeconfig, ns, gateway string, pki *harness.PKI, extra ...string) *served {
	t.Helper()
	if pki == nil {
		var err error
		if pki, err = harness.NewPKI(t.TempDir(), "xds.test"); err != nil {
			t.Fatal(err)
		}
	}
	bin, err := env.Binaries()
	if err != nil {
		t.Fatal(err)
	}
	xdsPort, healthPort, metricsPort := harness.FreePortString(t), harness.FreePortString(t), harness.FreePortString(t)
	args := []string{"serve"}
	if gateway != "" {
		args = append(args, "--gateway", ns+"/"+gateway, "--envoy-service", gateway+"-envoy")
	}
	args = append(append(args,
		"--xds-address", "127.0.0.1:"+xdsPort, "--xds-cert-file", pki.ServerCert, "--xds-key-file", pki.ServerKey, "--xds-ca-file", pki.CA,
		"--health-address", "127.0.0.1:"+healthPort, "--metrics-address", "127.0.0.1:"+metricsPort, "--update-delay", "10ms", "--log-format", "console",
	), extra...)
	environ := []string{"KUBECONFIG=" + kubeconfig}
	if extraEnv := os.Getenv("ISOBAR_CONTROLLER_ENV"); extraEnv != "" {
		// For experiments on the controller alone (GOMEMLIMIT=150MiB):
		// the test API server and etcd keep this process's environment.
		environ = append(environ, strings.Split(extraEnv, ",")...)
	}
	proc, err := harness.StartProcessEnv(env.Dir, environ, bin+"/isobar-controller", args...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if code, err := proc.Stop(20 * time.Second); err != nil || code != 0 {
			t.Errorf("isobar-controller serve stopped with code %d, %v\n%s", code, err, proc.Output())
		}
	})
	return &served{proc: proc, pki: pki, xds: "127.0.0.1:" + xdsPort, metrics: "http://127.0.0.1:" + metricsPort + "/metrics", health: "http://127.0.0.1:" + healthPort}
}

// fleet creates a GatewayClass of ours, an HTTP Gateway on port 80 and its
// Envoy Service in ns.
func fleet(t *testing.T, ctx context.Context, ns string, gateways ...string) {
	t.Helper()
	class := &gatewayv1.GatewayClass{ObjectMeta: metav1.ObjectMeta{Name: "serve-" + ns}, Spec: gatewayv1.GatewayClassSpec{ControllerName: controllerName}}
	create(t, ctx, class)
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), class) })
	for _, name := range gateways {
		create(t, ctx,
			&gatewayv1.Gateway{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
				Spec: gatewayv1.GatewaySpec{GatewayClassName: gatewayv1.ObjectName(class.Name), Listeners: []gatewayv1.Listener{
					{Name: "http", Protocol: gatewayv1.HTTPProtocolType, Port: 80},
				}},
			},
			&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name + "-envoy"},
				Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 80}}}},
		)
	}
}

// backend creates a Service with one EndpointSlice of the given addresses.
func backend(t *testing.T, ctx context.Context, ns, name string, addresses ...string) *discoveryv1.EndpointSlice {
	t.Helper()
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Namespace: ns, Name: name + "-1", Labels: map[string]string{discoveryv1.LabelServiceName: name}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("http"), Port: ptr.To[int32](8080)}},
		Endpoints:   []discoveryv1.Endpoint{{Addresses: addresses}},
	}
	create(t, ctx,
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 8080}}}},
		slice)
	return slice
}

func httpRoute(ns, name, service string, parents ...string) *gatewayv1.HTTPRoute {
	r := &gatewayv1.HTTPRoute{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: gatewayv1.HTTPRouteSpec{
			Rules: []gatewayv1.HTTPRouteRule{{BackendRefs: []gatewayv1.HTTPBackendRef{{BackendRef: gatewayv1.BackendRef{
				BackendObjectReference: gatewayv1.BackendObjectReference{Name: gatewayv1.ObjectName(service), Port: ptr.To[gatewayv1.PortNumber](8080)},
			}}}}},
		},
	}
	for _, p := range parents {
		r.Spec.ParentRefs = append(r.Spec.ParentRefs, gatewayv1.ParentReference{Name: gatewayv1.ObjectName(p)})
	}
	return r
}

func create(t *testing.T, ctx context.Context, objs ...client.Object) {
	t.Helper()
	for _, o := range objs {
		if err := env.Client.Create(ctx, o); err != nil {
			t.Fatalf("creating %T %s: %v", o, o.GetName(), err)
		}
	}
}

// waitGatewayCondition waits for the Gateway's condition typ to have status
// and reason and a message containing message.
func waitGatewayCondition(t *testing.T, ctx context.Context, ns, name, typ string, status metav1.ConditionStatus, reason, message string) {
	t.Helper()
	var last *metav1.Condition
	defer func() {
		if t.Failed() && last != nil {
			t.Logf("Gateway %s/%s: last %s: %s %s: %s", ns, name, typ, last.Status, last.Reason, last.Message)
		}
	}()
	eventually(t, 30*time.Second, "Gateway "+typ+" "+string(status)+" "+reason+" "+message, func() bool {
		g := &gatewayv1.Gateway{}
		if err := env.Client.Get(ctx, keyOf(ns, name), g); err != nil {
			t.Fatal(err)
		}
		last = meta.FindStatusCondition(g.Status.Conditions, typ)
		return last != nil && last.Status == status && last.Reason == reason && strings.Contains(last.Message, message) && last.ObservedGeneration == g.Generation
	})
}

// routeParent is our status entry for a parent Gateway of the route, or nil.
func routeParent(r *gatewayv1.HTTPRoute, gateway string) *gatewayv1.RouteParentStatus {
	for i, p := range r.Status.Parents {
		if p.ControllerName == controllerName && string(p.ParentRef.Name) == gateway {
			return &r.Status.Parents[i]
		}
	}
	return nil
}

// appFleet sets up the Gateway web with one HTTPRoute to the Service app
// (one endpoint, 10.1.2.3) in a new namespace, and starts its controller.
func appFleet(t *testing.T, ctx context.Context) (string, *discoveryv1.EndpointSlice, *served) {
	t.Helper()
	ns := namespace(t)
	fleet(t, ctx, ns, "web")
	slice := backend(t, ctx, ns, "app", "10.1.2.3")
	create(t, ctx, httpRoute(ns, "app", "app", "web"))
	return ns, slice, serve(t, ns, "web", nil)
}

// isobar-controller serve against a real API server with a real xDS client
// over mutual TLS: it serves the Gateway's configuration, sends exactly
// what a change changes, reports Programmed only once the connected Envoy
// acknowledges, reports a rejection with Envoy's message, and keeps other
// controllers' route status entries.
func TestServe(t *testing.T) {
	ctx, cancel := harness.Context()
	defer cancel()
	ns, slice, s := appFleet(t, ctx)
	waitGatewayCondition(t, ctx, ns, "web", "Accepted", metav1.ConditionTrue, "Accepted", "")
	waitGatewayCondition(t, ctx, ns, "web", "Programmed", metav1.ConditionFalse, "Pending", "no Envoy")

	// Envoy connects with the fleet's client certificate and gets the
	// whole configuration.
	ads := newADSClient(t, dialXDS(t, s.pki, s.xds), "envoy-0", ns+"/web", xdsTypes...)
	lds := ads.next(resourcev3.ListenerType, 10*time.Second)
	if ls := resources[listenerv3.Listener](t, lds); len(ls) != 1 || ls[0].Name != "http_80" || ls[0].GetAddress().GetSocketAddress().GetPortValue() != 64592 {
		t.Fatalf("LDS: %v, want http_80 on 64592", ls)
	}
	cds := ads.next(resourcev3.ClusterType, 10*time.Second)
	if cs := resources[clusterv3.Cluster](t, cds); len(cs) != 1 || cs[0].Name != ns+"/app/8080" {
		t.Fatalf("CDS: %v, want %s/app/8080", cs, ns)
	}
	eds := ads.next(resourcev3.EndpointType, 10*time.Second)
	if got := endpointAddresses(t, eds); !slices.Equal(got, []string{"10.1.2.3:8080"}) {
		t.Fatalf("EDS: %v, want 10.1.2.3:8080", got)
	}
	rds := ads.next(resourcev3.RouteType, 10*time.Second)
	if got := domains(t, rds); !slices.Equal(got, []string{"*"}) {
		t.Fatalf("RDS domains %v, want *", got)
	}
	ads.ack(lds)
	ads.ack(cds)
	ads.ack(eds)
	// Not yet Programmed: one type is still unacknowledged.
	time.Sleep(200 * time.Millisecond)
	g := &gatewayv1.Gateway{}
	if err := env.Client.Get(ctx, keyOf(ns, "web"), g); err != nil {
		t.Fatal(err)
	}
	if meta.IsStatusConditionTrue(g.Status.Conditions, "Programmed") {
		t.Fatal("Programmed before Envoy acknowledged the routes")
	}
	ads.ack(rds)
	waitGatewayCondition(t, ctx, ns, "web", "Programmed", metav1.ConditionTrue, "Programmed", "")
	svc := &corev1.Service{}
	if err := env.Client.Get(ctx, keyOf(ns, "web-envoy"), svc); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Get(ctx, keyOf(ns, "web"), g); err != nil {
		t.Fatal(err)
	}
	if len(g.Status.Addresses) != 1 || g.Status.Addresses[0].Value != svc.Spec.ClusterIP {
		t.Errorf("addresses %v, want the Envoy Service's cluster IP %s", g.Status.Addresses, svc.Spec.ClusterIP)
	}

	// Another controller's entry in the route's status survives ours.
	hr := &gatewayv1.HTTPRoute{}
	eventually(t, 30*time.Second, "the route's status entry", func() bool {
		if err := env.Client.Get(ctx, keyOf(ns, "app"), hr); err != nil {
			t.Fatal(err)
		}
		p := routeParent(hr, "web")
		return p != nil && meta.IsStatusConditionTrue(p.Conditions, "Accepted") && meta.IsStatusConditionTrue(p.Conditions, "ResolvedRefs")
	})
	hr.Status.Parents = append(hr.Status.Parents, gatewayv1.RouteParentStatus{
		ParentRef: gatewayv1.ParentReference{Name: "elsewhere"}, ControllerName: "example.com/other",
		Conditions: []metav1.Condition{{Type: "Accepted", Status: metav1.ConditionTrue, Reason: "Accepted", LastTransitionTime: metav1.Now()}},
	})
	if err := env.Client.Status().Update(ctx, hr); err != nil {
		t.Fatal(err)
	}

	// A route change sends new routes and nothing else.
	hr.Spec.Hostnames = []gatewayv1.Hostname{"app.example.com"}
	if err := env.Client.Update(ctx, hr); err != nil {
		t.Fatal(err)
	}
	rds2 := ads.next(resourcev3.RouteType, 10*time.Second)
	if got := domains(t, rds2); !slices.Contains(got, "app.example.com") {
		t.Fatalf("RDS domains after the change %v, want app.example.com", got)
	}
	if rds2.VersionInfo == rds.VersionInfo {
		t.Errorf("RDS version did not change: %s", rds2.VersionInfo)
	}
	ads.ack(rds2)
	eventually(t, 30*time.Second, "our entry to follow the new generation, theirs kept", func() bool {
		if err := env.Client.Get(ctx, keyOf(ns, "app"), hr); err != nil {
			t.Fatal(err)
		}
		ours := routeParent(hr, "web")
		theirs := slices.ContainsFunc(hr.Status.Parents, func(p gatewayv1.RouteParentStatus) bool { return p.ControllerName == "example.com/other" })
		return ours != nil && theirs && meta.FindStatusCondition(ours.Conditions, "Accepted").ObservedGeneration == hr.Generation
	})

	// An endpoint change sends endpoints and nothing else, without a
	// translation.
	// Other tests' namespaces being deleted cause translations; wait for
	// a quiet moment so that any translation now is this change's.
	translations := quiet(t, s.metrics)
	slice.Endpoints = []discoveryv1.Endpoint{{Addresses: []string{"10.1.2.4"}}}
	if err := env.Client.Update(ctx, slice); err != nil {
		t.Fatal(err)
	}
	eds2 := ads.next(resourcev3.EndpointType, 10*time.Second)
	if got := endpointAddresses(t, eds2); !slices.Equal(got, []string{"10.1.2.4:8080"}) {
		t.Fatalf("EDS after the change: %v, want 10.1.2.4:8080", got)
	}
	if p := ads.pending(); len(p) != 0 {
		t.Errorf("an endpoint change also sent %v", p)
	}
	if m := scrape(t, s.metrics); m["isobar_translation_seconds_count"] != translations || m["isobar_endpoint_fast_path_pushes_total"] != 1 {
		t.Errorf("an endpoint change took %v translations and %v fast-path pushes, want 0 and 1",
			m["isobar_translation_seconds_count"]-translations, m["isobar_endpoint_fast_path_pushes_total"])
	}

	// Envoy rejects the endpoints: the Gateway says so with Envoy's message.
	ads.nack(eds2, "simulated rejection of the endpoints")
	waitGatewayCondition(t, ctx, ns, "web", "Programmed", metav1.ConditionFalse, "Invalid", "simulated rejection of the endpoints")
	// A later acknowledgement clears it.
	ads.ack(eds2)
	waitGatewayCondition(t, ctx, ns, "web", "Programmed", metav1.ConditionTrue, "Programmed", "")

	// Someone erases our route status entry: it comes back.
	if err := env.Client.Get(ctx, keyOf(ns, "app"), hr); err != nil {
		t.Fatal(err)
	}
	hr.Status.Parents = slices.DeleteFunc(hr.Status.Parents, func(p gatewayv1.RouteParentStatus) bool { return p.ControllerName == controllerName })
	if err := env.Client.Status().Update(ctx, hr); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "our erased route status entry to come back", func() bool {
		if err := env.Client.Get(ctx, keyOf(ns, "app"), hr); err != nil {
			t.Fatal(err)
		}
		return routeParent(hr, "web") != nil && len(hr.Status.Parents) == 2
	})

	m := scrape(t, s.metrics)
	for name, want := range map[string]float64{"isobar_xds_connected_envoys": 1, "isobar_xds_nacks_total": 1, "isobar_xds_acks_total": 6} {
		if m[name] != want {
			t.Errorf("%s = %v, want %v", name, m[name], want)
		}
	}
	if m[`isobar_xds_version{type="envoy.config.endpoint.v3.ClusterLoadAssignment"}`] < 2 || m["isobar_translation_seconds_count"] < 1 || m[`isobar_status_writes_total{kind="Gateway"}`] < 1 {
		t.Errorf("metrics lack versions, translations or status writes: %v", m)
	}
}

// quiet waits until the controller has not translated for five seconds and
// returns its translation count. (Two seconds were not enough in CI: other
// tests' namespaces, deleted by kube-controller-manager in bursts, caused a
// translation during the endpoint change.)
func quiet(t *testing.T, metrics string) float64 {
	t.Helper()
	return steady(t, metrics, "isobar_translation_seconds_count", 5*time.Second)
}

// steady waits until a metric (the sum of its series) has not changed for
// d and returns its value.
func steady(t *testing.T, metrics, name string, d time.Duration) float64 {
	t.Helper()
	return steadyWithin(t, metrics, name, d, time.Minute)
}

// steadyWithin is steady, waiting at most timeout.
func steadyWithin(t *testing.T, metrics, name string, d, timeout time.Duration) float64 {
	t.Helper()
	last, since := -1.0, time.Now()
	eventually(t, timeout, name+" unchanged for "+d.String(), func() bool {
		n := scrapeSum(t, metrics, name)
		if n != last {
			last, since = n, time.Now()
		}
		return time.Since(since) >= d
	})
	return last
}

// scrapeSum adds up every series of a metric; a name with labels is one
// series.
func scrapeSum(t *testing.T, url, name string) float64 {
	t.Helper()
	var sum float64
	for k, v := range scrape(t, url) {
		if k == name || strings.HasPrefix(k, name+"{") {
			sum += v
		}
	}
	return sum
}

// scrape reads a Prometheus text endpoint into name{labels} -> value.
func scrape(t *testing.T, url string) map[string]float64 {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, line := range strings.Split(string(body), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if v, err := strconv.ParseFloat(line[i+1:], 64); err == nil {
			out[line[:i]] = v
		}
	}
	return out
}

func endpointAddresses(t *testing.T, r *discoveryv3.DiscoveryResponse) []string {
	t.Helper()
	var out []string
	for _, cla := range resources[endpointv3.ClusterLoadAssignment](t, r) {
		for _, l := range cla.Endpoints {
			for _, e := range l.LbEndpoints {
				a := e.GetEndpoint().GetAddress().GetSocketAddress()
				out = append(out, a.GetAddress()+":"+strconv.FormatUint(uint64(a.GetPortValue()), 10))
			}
		}
	}
	slices.Sort(out)
	return out
}

func domains(t *testing.T, r *discoveryv3.DiscoveryResponse) []string {
	t.Helper()
	var out []string
	for _, rc := range resources[routev3.RouteConfiguration](t, r) {
		for _, vh := range rc.VirtualHosts {
			out = append(out, vh.Domains...)
		}
	}
	slices.Sort(out)
	return out
}
