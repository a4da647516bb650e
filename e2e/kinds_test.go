package e2e

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"isobar.dev/e2e/harness"
)

// startCluster starts a standard-channel cluster of its own, for a test
// that needs what the shared one has not (CRDs left out, a node agent).
func startCluster(t *testing.T, opts harness.Options) *harness.Env {
	t.Helper()
	if env.Channel != "standard" {
		t.Skip("runs a standard-channel cluster of its own: once, in the standard-channel pass")
	}
	opts.Channel = "standard"
	e, err := harness.Start(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := e.Stop(); err != nil {
			t.Error(err)
		}
	})
	return e
}

// runOn starts one of our built binaries against cluster e as user, until
// the test ends.
func runOn(t *testing.T, e *harness.Env, user, binary string, args ...string) *harness.Process {
	t.Helper()
	kubeconfig, err := e.Kubeconfig(user)
	if err != nil {
		t.Fatal(err)
	}
	bin, err := env.Binaries()
	if err != nil {
		t.Fatal(err)
	}
	p, err := harness.StartProcessEnv(e.Dir, []string{"KUBECONFIG=" + kubeconfig}, bin+"/"+binary, args...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = p.Stop(10 * time.Second) })
	return p
}

// restartsOnInstall installs the CRDs e left out and checks that p exits
// with an error saying it restarts to watch them.
func restartsOnInstall(t *testing.T, e *harness.Env, p *harness.Process) {
	t.Helper()
	if err := e.InstallOmitted(); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, p.Name+" to exit", func() bool {
		exited, _ := p.Exited()
		return exited
	})
	if _, err := p.Exited(); err == nil || !strings.Contains(p.Output(), "restarting to watch them") {
		t.Errorf("after the CRDs were installed %s exited with %v, want an error that it restarts:\n%s", p.Name, err, p.Output())
	}
}

// A cluster may have installed only some Gateway API CRDs, and not
// Contour's: the controller starts all the same, watches what is served,
// says what is not (in its log and in the listeners' supportedKinds), and
// restarts when a CRD is installed so as to watch it.
func TestControllerWithoutSomeCRDs(t *testing.T) {
	t.Parallel()
	e := startCluster(t, harness.Options{Omit: []string{"udproutes.gateway.networking.k8s.io", "httpproxies.projectcontour.io"}})
	ctx, cancel := harness.Context()
	defer cancel()
	const ns = "default"
	for _, o := range []client.Object{
		&gatewayv1.GatewayClass{ObjectMeta: metav1.ObjectMeta{Name: "isobar"}, Spec: gatewayv1.GatewayClassSpec{ControllerName: controllerName}},
		&gatewayv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}, Spec: gatewayv1.GatewaySpec{GatewayClassName: "isobar", Listeners: []gatewayv1.Listener{
			{Name: "http", Protocol: gatewayv1.HTTPProtocolType, Port: 80},
			{Name: "dns", Protocol: gatewayv1.UDPProtocolType, Port: 53},
		}}},
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web-envoy"}, Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 80}}}},
	} {
		if err := e.Client.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	pki, err := harness.NewPKI(t.TempDir(), "xds.test")
	if err != nil {
		t.Fatal(err)
	}
	health := harness.FreePortString(t)
	proc := runOn(t, e, "isobar-controller", "isobar-controller", "serve",
		"--gateway", ns+"/web", "--envoy-service", "web-envoy", "--kinds-interval", "500ms",
		"--xds-address", "127.0.0.1:"+harness.FreePortString(t), "--xds-cert-file", pki.ServerCert, "--xds-key-file", pki.ServerKey, "--xds-ca-file", pki.CA,
		"--health-address", "127.0.0.1:"+health, "--metrics-address", "0", "--log-format", "console")
	waitReady(t, proc, "http://127.0.0.1:"+health+"/readyz", 60*time.Second)

	eventually(t, 30*time.Second, "the UDP listener to offer no route kind, saying why, and the HTTP listener its kinds", func() bool {
		gw := &gatewayv1.Gateway{}
		if err := e.Client.Get(ctx, keyOf(ns, "web"), gw); err != nil {
			t.Fatal(err)
		}
		ok := 0
		for _, l := range gw.Status.Listeners {
			c := meta.FindStatusCondition(l.Conditions, string(gatewayv1.ListenerConditionResolvedRefs))
			switch l.Name {
			case "dns":
				if len(l.SupportedKinds) == 0 && c != nil && c.Status == metav1.ConditionFalse && c.Reason == string(gatewayv1.ListenerReasonInvalidRouteKinds) &&
					strings.Contains(c.Message, "does not serve [UDPRoute]") {
					ok++
				}
			case "http":
				if len(l.SupportedKinds) == 2 && c != nil && c.Status == metav1.ConditionTrue {
					ok++
				}
			}
		}
		return ok == 2
	})
	if out := proc.Output(); !strings.Contains(out, "UDPRoute is not served at gateway.networking.k8s.io/v1: its CRD is not installed") {
		t.Errorf("the log does not say that UDPRoute is not served:\n%s", out)
	}
	if out := proc.Output(); !strings.Contains(out, "HTTPProxy is not served at projectcontour.io/v1: its CRD is not installed") {
		t.Errorf("the log does not say that HTTPProxy is not served:\n%s", out)
	}
	restartsOnInstall(t, e, proc)
}

// Without the Gateway API CRDs the operator stays up and healthy, says
// what it waits for, and restarts once they are installed.
func TestOperatorWithoutGatewayCRDs(t *testing.T) {
	t.Parallel()
	e := startCluster(t, harness.Options{Omit: []string{"gatewayclasses.gateway.networking.k8s.io", "gateways.gateway.networking.k8s.io"}})
	health := harness.FreePortString(t)
	op := runOn(t, e, "isobar-operator", "isobar-operator",
		"--controller-name="+controllerName, "--health-probe-bind-address=127.0.0.1:"+health, "--metrics-bind-address=0",
		"--log-format=console", "--kinds-interval=500ms")
	waitReady(t, op, "http://127.0.0.1:"+health+"/readyz", 30*time.Second)
	waitReady(t, op, "http://127.0.0.1:"+health+"/healthz", 5*time.Second)
	for _, want := range []string{"GatewayClass is not served at gateway.networking.k8s.io/v1: its CRD is not installed", "provisioning waits for the Gateway API CRDs"} {
		if out := op.Output(); !strings.Contains(out, want) {
			t.Errorf("the log does not say %q:\n%s", want, out)
		}
	}
	restartsOnInstall(t, e, op)
}
