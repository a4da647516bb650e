package e2e

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	isobarv1alpha1 "isobar.dev/api/v1alpha1"
	"isobar.dev/e2e/harness"
)

// The node agent makes workloads look as a kubelet would: Pods of a
// Deployment are bound, get IPs, run what their runner starts and turn
// Ready, kube-controller-manager puts them in their Service's
// EndpointSlices, and a deleted Pod's runner is stopped and the Pod goes
// away. A Pod whose Secret volume does not exist yet waits for it, as the
// kubelet waits to mount it, and is no error.
func TestNodeAgent(t *testing.T) {
	t.Parallel()
	e := startCluster(t, harness.Options{ControllerManager: true})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var mu sync.Mutex
	running := map[string]bool{}
	agent, err := harness.StartNodeAgent(ctx, e.Config, func(pod *corev1.Pod) (func(), error) {
		if _, err := e.Mount(ctx, pod, &pod.Spec.Containers[0]); err != nil {
			return nil, err
		}
		mu.Lock()
		defer mu.Unlock()
		running[pod.Name] = true
		return func() {
			mu.Lock()
			defer mu.Unlock()
			delete(running, pod.Name)
		}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	const ns = "default"
	labels := map[string]string{"app": "echo"}
	for _, o := range []client.Object{
		&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "echo"}, Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](2),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{
				Containers: []corev1.Container{{Name: "echo", Image: "echo:test", Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 3000}},
					VolumeMounts: []corev1.VolumeMount{{Name: "cfg", MountPath: "/etc/echo"}}}},
				Volumes: []corev1.Volume{{Name: "cfg", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "echo-cfg"}}}},
			}},
		}},
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "echo"}, Spec: corev1.ServiceSpec{
			Selector: labels, Ports: []corev1.ServicePort{{Name: "http", Port: 8080, TargetPort: intstr.FromString("http")}},
		}},
	} {
		if err := e.Client.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	ready := func() []string {
		var list discoveryv1.EndpointSliceList
		if err := e.Client.List(ctx, &list, client.InNamespace(ns), client.MatchingLabels{discoveryv1.LabelServiceName: "echo"}); err != nil {
			t.Fatal(err)
		}
		var ips []string
		for _, s := range list.Items {
			for _, ep := range s.Endpoints {
				if ptr.Deref(ep.Conditions.Ready, false) && ep.NodeName != nil && *ep.NodeName == harness.NodeName {
					ips = append(ips, ep.Addresses...)
				}
			}
		}
		slices.Sort(ips)
		return ips
	}
	eventually(t, time.Minute, "both Pods bound to the node", func() bool {
		var pods corev1.PodList
		if err := e.Client.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels(labels)); err != nil {
			t.Fatal(err)
		}
		return len(pods.Items) == 2 && pods.Items[0].Spec.NodeName != "" && pods.Items[1].Spec.NodeName != ""
	})
	mu.Lock()
	if len(running) != 0 {
		t.Errorf("runners started for %v before their Secret volume exists", running)
	}
	mu.Unlock()
	if err := e.Client.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "echo-cfg"}, StringData: map[string]string{"k": "v"}}); err != nil {
		t.Fatal(err)
	}
	var first []string
	eventually(t, time.Minute, "the Service's EndpointSlices to hold both Pods, ready, on the node", func() bool {
		first = ready()
		return len(first) == 2 && first[0] != first[1]
	})
	mu.Lock()
	if len(running) != 2 {
		t.Errorf("runners started for %v, want both Pods", running)
	}
	mu.Unlock()

	var pods corev1.PodList
	if err := e.Client.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels(labels)); err != nil {
		t.Fatal(err)
	}
	victim := pods.Items[0]
	if victim.Status.PodIP == "" || !slices.Contains(first, victim.Status.PodIP) {
		t.Fatalf("pod %s has IP %q, not one of the endpoints %v", victim.Name, victim.Status.PodIP, first)
	}
	if err := e.Client.Delete(ctx, &victim); err != nil {
		t.Fatal(err)
	}
	eventually(t, time.Minute, "the deleted Pod to be gone, its runner stopped, and its replacement ready", func() bool {
		mu.Lock()
		stopped := !running[victim.Name]
		mu.Unlock()
		now := ready()
		return stopped && len(now) == 2 && !slices.Contains(now, victim.Status.PodIP)
	})
	if errs := agent.Errors(); len(errs) > 0 {
		t.Errorf("node agent errors: %v", errs)
	}
}

// The rig's first step toward the conformance suite: the real operator
// provisions a fleet, the node agent runs the controller Deployment's Pod
// as the real isobar-controller (its arguments, certificates and runtime
// settings from the Pod), and that controller serves its Gateway: Accepted,
// with the Envoy Service's cluster IP as its address, and Programmed false
// until an Envoy connects. Envoy Pods run their real bootstrap init
// container, whose Envoy bootstrap names the Pod and the controller.
func TestOperatorFleetRunsOnTheNodeAgent(t *testing.T) {
	t.Parallel()
	e := startCluster(t, harness.Options{ControllerManager: true})
	// This test's cluster starts beside the other parallel tests': on a
	// loaded two-core machine its controller-manager, the operator and
	// the fleet's controller take minutes to come up one after another.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	kubeconfig, err := e.Kubeconfig("fleet")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	bootstraps := map[string]string{} // Envoy pod -> its bootstrap
	agent, err := harness.StartNodeAgent(ctx, e.Config, func(pod *corev1.Pod) (func(), error) {
		if pod.Labels["app.kubernetes.io/component"] == "envoy" {
			p, err := e.RunPodProcess(ctx, kubeconfig, pod, "bootstrap", "isobar-controller")
			if err != nil {
				return nil, err
			}
			if code, err := p.Wait(30 * time.Second); err != nil || code != 0 {
				return nil, fmt.Errorf("bootstrap exited with %d, %w:\n%s", code, err, p.Output())
			}
			data, err := os.ReadFile(filepath.Join(p.Volumes["bootstrap"], "envoy.json"))
			if err != nil {
				return nil, err
			}
			mu.Lock()
			bootstraps[pod.Name] = string(data)
			mu.Unlock()
			return nil, nil
		}
		if pod.Labels["app.kubernetes.io/component"] != "controller" {
			return nil, nil
		}
		p, err := e.RunPodProcess(ctx, kubeconfig, pod, "controller", "isobar-controller")
		if err != nil {
			return nil, err
		}
		return func() { _, _ = p.Stop(10 * time.Second) }, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	health := harness.FreePortString(t)
	runOn(t, e, "isobar-operator", "isobar-operator", "--controller-name="+controllerName,
		"--health-probe-bind-address=127.0.0.1:"+health, "--metrics-bind-address=0", "--log-format=console")
	const ns = "default"
	for _, o := range []client.Object{
		&isobarv1alpha1.ContourDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cluster-ip"}, Spec: isobarv1alpha1.ContourDeploymentSpec{
			Envoy: isobarv1alpha1.EnvoySettings{NetworkPublishing: isobarv1alpha1.NetworkPublishing{Type: isobarv1alpha1.ClusterIPServicePublishing}},
		}},
		&gatewayv1.GatewayClass{ObjectMeta: metav1.ObjectMeta{Name: "isobar"}, Spec: gatewayv1.GatewayClassSpec{ControllerName: controllerName,
			ParametersRef: &gatewayv1.ParametersReference{Group: "isobar.dev", Kind: "ContourDeployment", Namespace: ptr.To(gatewayv1.Namespace(ns)), Name: "cluster-ip"}}},
		&gatewayv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}, Spec: gatewayv1.GatewaySpec{GatewayClassName: "isobar",
			Listeners: []gatewayv1.Listener{{Name: "http", Protocol: gatewayv1.HTTPProtocolType, Port: 80}}}},
	} {
		if err := e.Client.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	gw := &gatewayv1.Gateway{}
	for deadline := time.Now().Add(3 * time.Minute); ; time.Sleep(100 * time.Millisecond) {
		if errs := agent.Errors(); len(errs) > 0 {
			t.Fatalf("the node agent could not run a Pod: %v", errs)
		}
		if err := e.Client.Get(ctx, keyOf(ns, "web"), gw); err != nil {
			t.Fatal(err)
		}
		programmed := meta.FindStatusCondition(gw.Status.Conditions, "Programmed")
		if meta.IsStatusConditionTrue(gw.Status.Conditions, "Accepted") && len(gw.Status.Addresses) == 1 &&
			programmed != nil && programmed.Status == metav1.ConditionFalse && programmed.Reason == "Pending" {
			break
		}
		if time.Now().After(deadline) {
			var pods corev1.PodList
			_ = e.Client.List(ctx, &pods, client.InNamespace(ns))
			var phases []string
			for _, p := range pods.Items {
				phases = append(phases, p.Name+"="+string(p.Status.Phase))
			}
			t.Fatalf("in 3 minutes the fleet's controller did not accept the Gateway and report the Envoy Service's address: conditions %+v, addresses %v; Pods %v",
				gw.Status.Conditions, gw.Status.Addresses, phases)
		}
	}
	eventually(t, time.Minute, "the Envoy Pods' bootstraps", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(bootstraps) > 0
	})
	mu.Lock()
	defer mu.Unlock()
	for pod, b := range bootstraps {
		for _, want := range []string{`"id":"` + pod + `"`, `"cluster":"default/web"`, `"address":"web-isobar-controller.default.svc"`, `"portValue":8001`} {
			if !strings.Contains(strings.ReplaceAll(b, " ", ""), want) {
				t.Errorf("the bootstrap of %s lacks %s:\n%s", pod, want, b)
			}
		}
	}
}

// Two node agents never give Pods one address, even while the first is
// still stopping what it ran: a Pod listens on its address's ports, and a
// process of an earlier rig holding them made a later rig's controller
// fail to listen while its Envoys reached the old controller (another
// fleet's certificate, a CA they do not trust, then connection refused).
// Each agent claims a block of addresses no running agent holds, and
// gives it up once what it ran has stopped.
func TestNodeAgentsNeverShareAnAddress(t *testing.T) {
	t.Parallel()
	e := startCluster(t, harness.Options{})
	listenOnPort := func(stopped chan struct{}) harness.PodRunner {
		return func(pod *corev1.Pod) (func(), error) {
			l, err := net.Listen("tcp", net.JoinHostPort(harness.Loopback(pod.Status.PodIP), "8001"))
			if err != nil {
				return nil, err
			}
			// The process takes its time to stop, as a controller does.
			return func() {
				<-stopped
				l.Close()
			}, nil
		}
	}
	running := func(ctx context.Context, name string) string {
		t.Helper()
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "c:test"}}}}
		if err := e.Client.Create(ctx, pod); err != nil {
			t.Fatal(err)
		}
		eventually(t, 30*time.Second, "Pod "+name+" running", func() bool {
			if err := e.Client.Get(ctx, client.ObjectKeyFromObject(pod), pod); err != nil {
				t.Fatal(err)
			}
			return pod.Status.Phase == corev1.PodRunning
		})
		return pod.Status.PodIP
	}
	lingering := make(chan struct{})
	ctx1, cancel1 := context.WithCancel(context.Background())
	first, err := harness.StartNodeAgent(ctx1, e.Config, listenOnPort(lingering))
	if err != nil {
		t.Fatal(err)
	}
	ip1 := running(ctx1, "first")
	cancel1()

	// The next agent starts while the first one's process still listens.
	ctx2, cancel2 := context.WithCancel(context.Background())
	defer cancel2()
	done := make(chan struct{})
	defer close(done)
	second, err := harness.StartNodeAgent(ctx2, e.Config, listenOnPort(done))
	if err != nil {
		t.Fatal(err)
	}
	ip2 := running(ctx2, "second")
	if ip1 == ip2 {
		t.Errorf("both agents gave their Pod %s", ip1)
	}
	for _, a := range []*harness.NodeAgent{first, second} {
		for _, err := range a.Errors() {
			t.Errorf("node agent: %v", err)
		}
	}
	close(lingering)
	select {
	case <-first.Stopped():
	case <-time.After(30 * time.Second):
		t.Error("the first agent did not stop what it ran")
	}
}
