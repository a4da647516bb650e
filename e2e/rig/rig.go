// Package rig is a cluster on this machine with Isobar installed as a user
// would, for the tests that need a fleet: a real API server and
// controller manager, a node agent that plays the fleet's Pods (the real
// isobar-operator and isobar-controller, Envoy's bootstrap and a simulated
// data plane, upstream's echo servers), and a kube-proxy over loopback
// addresses.
package rig

import (
	"context"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	xv1alpha1 "sigs.k8s.io/gateway-api/apisx/v1alpha1"

	isobarv1alpha1 "isobar.dev/api/v1alpha1"
	"isobar.dev/e2e/dataplane"
	"isobar.dev/e2e/harness"
)

// The names the rig's GatewayClass has: the one the conformance suite
// and the fleet tests make their Gateways of.
const (
	ControllerName   = "isobar.dev/gateway-controller"
	GatewayClassName = "isobar"
)

// Rig is a cluster with Isobar installed as a user would: the operator
// running, and a GatewayClass whose ContourDeployment publishes Envoy on a
// ClusterIP Service, so Gateways get addresses without a cloud.
type Rig struct {
	Env   *harness.Env
	Fleet *Fleet
	Agent *harness.NodeAgent
	// Operator is the running isobar-operator.
	Operator *harness.Process
}

// Options vary the rig: the CRDs of a Gateway API channel ("" for the
// default), Pods Ready only once what they run is (probe; otherwise once
// started), and more flags for the operator; or no operator and no
// GatewayClass at all (bare), for a test that installs Isobar itself, and
// CRDs the cluster starts without (omit, see harness.Options.Omit).
type Options struct {
	Channel      string
	Probe        bool
	OperatorArgs []string
	Bare         bool
	Omit         []string
}

// Start starts a rig with the default channel's CRDs.
func Start(t *testing.T) *Rig { return StartOn(t, "") }

// StartOn is Start with the CRDs of a Gateway API channel ("" for
// the default).
func StartOn(t *testing.T, channel string) *Rig {
	return StartWith(t, Options{Channel: channel, Probe: true})
}

// StartWith starts a rig as opts say; it stops when the test ends.
func StartWith(t *testing.T, opts Options) *Rig {
	t.Helper()
	e, err := harness.Start(harness.Options{Channel: opts.Channel, ControllerManager: true, ServiceCIDR: serviceCIDR, Omit: opts.Omit})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := e.Stop(); err != nil {
			t.Error(err)
		}
	})
	if err := xv1alpha1.Install(e.Client.Scheme()); err != nil {
		t.Fatal(err)
	}
	// After cancel (cleanups run last first): the next test's rig starts
	// once this one's Pods have stopped.
	var agent *harness.NodeAgent
	t.Cleanup(func() {
		if agent == nil {
			return
		}
		select {
		case <-agent.Stopped():
		case <-time.After(time.Minute):
			t.Error("the node agent did not stop its Pods in a minute")
		}
	})
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	kubeconfig, err := e.Kubeconfig("fleet")
	if err != nil {
		t.Fatal(err)
	}
	logs := &PodLogs{}
	f := &Fleet{env: e, kubeconfig: kubeconfig, ctx: ctx, envoys: map[types.NamespacedName]*dataplane.Envoy{}, Logs: logs, network: &harness.Network{}}
	go (&kubeProxy{fleet: f}).run(ctx)
	var ready func(*corev1.Pod) bool
	if opts.Probe {
		ready = func(pod *corev1.Pod) bool { return f.ready(ctx, pod) }
	}
	agent, err = harness.StartProbingNodeAgent(ctx, e.Config, f.run, ready)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, err := range agent.Errors() {
			t.Errorf("node agent: %v", err)
		}
	})

	r := &Rig{Env: e, Fleet: f, Agent: agent}
	if opts.Bare {
		return r
	}
	r.StartOperator(t, opts.OperatorArgs...)
	t.Cleanup(func() { r.StopOperator(t) })

	const ns = "isobar-system"
	for _, o := range []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
		&isobarv1alpha1.ContourDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "conformance"}, Spec: isobarv1alpha1.ContourDeploymentSpec{
			Envoy: isobarv1alpha1.EnvoySettings{NetworkPublishing: isobarv1alpha1.NetworkPublishing{Type: isobarv1alpha1.ClusterIPServicePublishing}},
		}},
		&gatewayv1.GatewayClass{ObjectMeta: metav1.ObjectMeta{Name: GatewayClassName}, Spec: gatewayv1.GatewayClassSpec{ControllerName: ControllerName,
			ParametersRef: &gatewayv1.ParametersReference{Group: "isobar.dev", Kind: "ContourDeployment", Namespace: ptr.To(gatewayv1.Namespace(ns)), Name: "conformance"}}},
	} {
		if err := e.Client.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	// The suite reads the features to test from the class's status.
	deadline := time.Now().Add(time.Minute)
	for {
		gc := &gatewayv1.GatewayClass{}
		if err := e.Client.Get(ctx, types.NamespacedName{Name: GatewayClassName}, gc); err != nil {
			t.Fatal(err)
		}
		if meta.IsStatusConditionTrue(gc.Status.Conditions, string(gatewayv1.GatewayClassConditionStatusAccepted)) && len(gc.Status.SupportedFeatures) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("GatewayClass %s not accepted with supported features in a minute: %+v", GatewayClassName, gc.Status)
		}
		time.Sleep(200 * time.Millisecond)
	}
	return r
}

// StartOperator runs isobar-operator with more flags, as its Deployment
// would, and waits for it to be ready.
func (r *Rig) StartOperator(t *testing.T, args ...string) {
	t.Helper()
	operatorConfig, err := r.Env.Kubeconfig("isobar-operator")
	if err != nil {
		t.Fatal(err)
	}
	bin, err := r.Env.Binaries()
	if err != nil {
		t.Fatal(err)
	}
	health := harness.FreePortString(t)
	op, err := harness.StartProcessEnv(r.Env.Dir, []string{"KUBECONFIG=" + operatorConfig}, filepath.Join(bin, "isobar-operator"),
		append([]string{"--controller-name=" + ControllerName, "--health-probe-bind-address=127.0.0.1:" + health, "--metrics-bind-address=0", "--log-format=console"}, args...)...)
	if err != nil {
		t.Fatal(err)
	}
	r.Operator = op
	deadline := time.Now().Add(time.Minute)
	for {
		if exited, err := op.Exited(); exited {
			t.Fatalf("isobar-operator exited: %v\n%s", err, op.Output())
		}
		resp, err := http.Get("http://127.0.0.1:" + health + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("isobar-operator not ready in a minute:\n%s", op.Output())
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// StopOperator stops the running operator, showing its output when the
// test failed.
func (r *Rig) StopOperator(t *testing.T) {
	if r.Operator == nil {
		return
	}
	if t.Failed() {
		t.Logf("isobar-operator:\n%s", r.Operator.Output())
	}
	_, _ = r.Operator.Stop(10 * time.Second)
	r.Operator = nil
}
