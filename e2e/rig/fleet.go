package rig

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"isobar.dev/api/imagetag"
	"isobar.dev/e2e/dataplane"
	"isobar.dev/e2e/harness"
)

// Component label values the operator gives the Pods of a fleet.
const (
	ComponentLabel      = "app.kubernetes.io/component"
	ControllerComponent = "controller"
	EnvoyComponent      = "envoy"
	// OperatorComponent labels the Pods of config/default's Deployment.
	OperatorComponent = "operator"
)

// Fleet plays the Pods on the node agent: an operator Pod (of an install
// from config/default) becomes the real isobar-operator, a controller Pod the
// real isobar-controller, an Envoy Pod runs its real bootstrap init
// container and then a simulated Envoy that follows the bootstrap and
// proxies on the Pod's address, and the suite's backend Pods run the
// suite's echo server (runBackend).
type Fleet struct {
	env        *harness.Env
	kubeconfig string
	ctx        context.Context

	mu     sync.Mutex
	envoys map[types.NamespacedName]*dataplane.Envoy
	// controllers are the running controller Pods' processes, and
	// controllerKubeconfig, when set, what controller Pods reach the API
	// server with instead of kubeconfig (a test's harness.APIProxy).
	controllers          map[types.NamespacedName]*harness.PodProcess
	controllerKubeconfig string
	// images maps image references to the binaries unpacked from their
	// archives (harness.ImageBinary): a container of such an image runs
	// that binary; others run the binary of this tree.
	images map[string]string
	// network is how the Pods reach each other; logs are the backend
	// Pods' output.
	network *harness.Network
	Logs    *PodLogs
}

func (f *Fleet) run(pod *corev1.Pod) (func(), error) {
	switch pod.Labels[ComponentLabel] {
	case ControllerComponent:
		if slices.ContainsFunc(pod.Spec.Containers, func(c corev1.Container) bool { return strings.HasSuffix(c.Image, BrokenTag) }) {
			return nil, nil // a release whose controller never comes up
		}
		key := types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}
		stop, err := restarting(f.ctx, func() (*harness.PodProcess, error) {
			f.mu.Lock()
			kubeconfig := cmp.Or(f.controllerKubeconfig, f.kubeconfig)
			f.mu.Unlock()
			p, err := f.env.RunPodProcess(f.ctx, kubeconfig, pod, "controller", f.binary(pod, "controller", "isobar-controller"))
			if err == nil {
				f.mu.Lock()
				if f.controllers == nil {
					f.controllers = map[types.NamespacedName]*harness.PodProcess{}
				}
				f.controllers[key] = p
				f.mu.Unlock()
			}
			return p, err
		})
		if err != nil {
			return nil, err
		}
		return func() {
			f.mu.Lock()
			delete(f.controllers, key)
			f.mu.Unlock()
			stop()
		}, nil
	case OperatorComponent:
		return restarting(f.ctx, func() (*harness.PodProcess, error) {
			return f.env.RunPodProcess(f.ctx, f.kubeconfig, pod, "operator", f.binary(pod, "operator", "isobar-operator"))
		})
	case EnvoyComponent:
		stop, err := f.runEnvoy(pod)
		if _, pending := errors.AsType[*harness.MountPending](err); err != nil && !pending {
			// The node agent keeps it for the end; it matters now.
			fmt.Fprintf(os.Stderr, "simulated Envoy %s/%s: %v\n", pod.Namespace, pod.Name, err)
		}
		return stop, err
	}
	return f.runBackend(pod)
}

// restarting runs a Pod's container with start, and again each time its
// process exits on its own, as a kubelet restarts the containers of a Pod
// whose restartPolicy is Always (a Deployment's): after a back-off of 10
// s, doubling up to 5 minutes, and back to 10 s once a run lasted 10
// minutes. The binaries exit to be restarted (a served kind that changed,
// a lost leadership), so the rig must restart them as a cluster does. The
// returned stop ends the container and its restarts.
func restarting(ctx context.Context, start func() (*harness.PodProcess, error)) (stop func(), err error) {
	p, err := start()
	if err != nil {
		return nil, err
	}
	stopped := make(chan struct{})
	var mu sync.Mutex
	go func() {
		backoff := 10 * time.Second
		for {
			began := time.Now()
			select {
			case <-stopped:
				return
			case <-p.Done():
			}
			if time.Since(began) >= 10*time.Minute {
				backoff = 10 * time.Second
			}
			select {
			case <-stopped:
				return
			case <-ctx.Done():
				return
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, 5*time.Minute)
			mu.Lock()
			next, err := start()
			if err == nil {
				p = next
			}
			mu.Unlock()
			if err != nil {
				fmt.Fprintf(os.Stderr, "restarting %s: %v\n", p.Name, err)
				return
			}
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			mu.Lock()
			close(stopped)
			current := p
			mu.Unlock()
			_, _ = current.Stop(10 * time.Second)
		})
	}, nil
}

func (f *Fleet) runEnvoy(pod *corev1.Pod) (func(), error) {
	p, err := f.env.RunPodProcess(f.ctx, f.kubeconfig, pod, "bootstrap", f.binary(pod, "bootstrap", "isobar-controller"))
	if err != nil {
		return nil, err
	}
	if code, err := p.Wait(30 * time.Second); err != nil || code != 0 {
		return nil, fmt.Errorf("pod %s/%s: bootstrap exited with %d, %w:\n%s", pod.Namespace, pod.Name, code, err, p.Output())
	}
	var envoy *corev1.Container
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name == "envoy" {
			envoy = &pod.Spec.Containers[i]
		}
	}
	if envoy == nil {
		return nil, fmt.Errorf("pod %s/%s has no envoy container", pod.Namespace, pod.Name)
	}
	mounts, err := f.env.Mount(f.ctx, pod, envoy)
	if err != nil {
		return nil, err
	}
	b, err := dataplane.ReadBootstrap(filepath.Join(p.Volumes["bootstrap"], "envoy.json"), mounts.Rewrite)
	if err != nil {
		return nil, fmt.Errorf("pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	// The image decides the release Envoy is, and reports.
	if v, ok := imagetag.Of(envoy.Image); ok {
		b.Release = v
	}
	e, err := dataplane.Start(b, f.dial)
	if err != nil {
		return nil, fmt.Errorf("pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	e.SetEnvironment(containerEnvironment(pod, envoy))
	e.Serve(harness.Loopback(pod.Status.PodIP), f.podDial)
	key := types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}
	go f.report(key, e)
	f.mu.Lock()
	f.envoys[key] = e
	f.mu.Unlock()
	return func() {
		f.mu.Lock()
		delete(f.envoys, key)
		f.mu.Unlock()
		// As the drain hook holds a stopping Envoy: new connections
		// already go to the others, those open finish.
		go func() {
			time.Sleep(drainTime)
			e.Stop()
		}()
	}, nil
}

// drainTime is how long a stopping Envoy Pod keeps serving the connections
// it has, as its preStop drain hook holds it.
const drainTime = time.Second

// BrokenTag ends the image of a controller release that never comes up:
// its Pod runs, and is never Ready.
const BrokenTag = ":broken"

// ready stands for a fleet Pod's readiness probes: the operator's and the
// controller's /readyz, and an Envoy's /ready, which answers once Envoy's first
// configuration has warmed. Other Pods are Ready once started.
func (f *Fleet) ready(ctx context.Context, pod *corev1.Pod) bool {
	switch pod.Labels[ComponentLabel] {
	case ControllerComponent, OperatorComponent:
		return harness.HTTPReady(ctx, pod)
	case EnvoyComponent:
		e := f.Envoy(types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name})
		return e != nil && e.Ready()
	}
	return true
}

// AddImage makes containers of image ref run binary.
func (f *Fleet) AddImage(ref, binary string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.images == nil {
		f.images = map[string]string{}
	}
	f.images[ref] = binary
}

// binary is what a Pod's container runs: the binary of its image, when
// the image is one added, or the tree's binary of that name.
func (f *Fleet) binary(pod *corev1.Pod, container, name string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, c := range slices.Concat(pod.Spec.InitContainers, pod.Spec.Containers) {
		if b, ok := f.images[c.Image]; ok && c.Name == container {
			return b
		}
	}
	return name
}

// Envoy is the simulated Envoy of a Pod, if it runs.
func (f *Fleet) Envoy(key types.NamespacedName) *dataplane.Envoy {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.envoys[key]
}

// dial connects to a Service's DNS name and port as the cluster's DNS and
// kube-proxy would: to a ready endpoint of the Service, at the Loopback
// address where the node agent's process for that Pod listens.
func (f *Fleet) dial(ctx context.Context, address string) (net.Conn, error) {
	ip, target, err := f.resolve(ctx, address)
	if err != nil {
		return nil, err
	}
	var d net.Dialer
	return d.DialContext(ctx, "tcp", net.JoinHostPort(harness.Loopback(ip), strconv.Itoa(int(target))))
}

// podDial connects as a Pod's network does: to a Pod's address through
// the Pod network, and to a Service's DNS name (a host Envoy resolves,
// such as a JWKS URI's) through the Pod network to a ready endpoint of
// the Service, as the cluster's DNS and kube-proxy send it.
func (f *Fleet) podDial(ctx context.Context, network, address string) (net.Conn, error) {
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		return nil, err
	}
	if net.ParseIP(host) != nil {
		return f.network.Dial(ctx, network, address)
	}
	ip, target, err := f.resolve(ctx, address)
	if err != nil {
		return nil, err
	}
	return f.network.Dial(ctx, network, net.JoinHostPort(ip, strconv.Itoa(int(target))))
}

// resolve is the Pod IP and port a Service's DNS name and port reach.
func (f *Fleet) resolve(ctx context.Context, address string) (string, int32, error) {
	host, portText, err := net.SplitHostPort(address)
	if err != nil {
		return "", 0, err
	}
	port, err := strconv.Atoi(portText)
	if err != nil {
		return "", 0, err
	}
	parts := strings.Split(strings.TrimSuffix(strings.TrimSuffix(host, ".cluster.local"), ".svc"), ".")
	if len(parts) != 2 {
		return "", 0, fmt.Errorf("%s is not a Service's DNS name", host)
	}
	return f.endpoint(ctx, types.NamespacedName{Namespace: parts[1], Name: parts[0]}, int32(port))
}

// endpoint picks a ready endpoint of a Service's port: its Pod IP and the
// target port the EndpointSlice resolved.
func (f *Fleet) endpoint(ctx context.Context, svc types.NamespacedName, port int32) (string, int32, error) {
	s := &corev1.Service{}
	if err := f.env.Client.Get(ctx, svc, s); err != nil {
		return "", 0, err
	}
	name, found := "", false
	for _, p := range s.Spec.Ports {
		if p.Port == port {
			name, found = p.Name, true
		}
	}
	if !found {
		return "", 0, fmt.Errorf("service %s has no port %d", svc, port)
	}
	var slices discoveryv1.EndpointSliceList
	if err := f.env.Client.List(ctx, &slices, client.InNamespace(svc.Namespace), client.MatchingLabels{discoveryv1.LabelServiceName: svc.Name}); err != nil {
		return "", 0, err
	}
	for _, sl := range slices.Items {
		for _, p := range sl.Ports {
			if ptr.Deref(p.Name, "") != name || p.Port == nil {
				continue
			}
			for _, ep := range sl.Endpoints {
				if ptr.Deref(ep.Conditions.Ready, false) && len(ep.Addresses) > 0 {
					return ep.Addresses[0], *p.Port, nil
				}
			}
		}
	}
	return "", 0, fmt.Errorf("service %s port %d has no ready endpoint", svc, port)
}

// report says on stderr why an Envoy has not synced, every few seconds
// until it has: the suite's own messages only say a Gateway is not
// Programmed.
func (f *Fleet) report(key types.NamespacedName, e *dataplane.Envoy) {
	for {
		select {
		case <-f.ctx.Done():
			return
		case <-time.After(5 * time.Second):
		}
		synced, err := e.Synced()
		if synced {
			return
		}
		if f.Envoy(key) != e {
			return
		}
		fmt.Fprintf(os.Stderr, "simulated Envoy %s has not synced yet: last stream error: %v\n", key, err)
	}
}

// containerEnvironment is the environment a kubelet gives a container:
// its values, and the Pod's name and namespace where they come from the
// downward API (the fields a fleet's Pods use).
func containerEnvironment(pod *corev1.Pod, c *corev1.Container) map[string]string {
	env := map[string]string{"HOSTNAME": pod.Name}
	for _, e := range c.Env {
		switch {
		case e.ValueFrom == nil:
			env[e.Name] = e.Value
		case e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.name":
			env[e.Name] = pod.Name
		case e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.namespace":
			env[e.Name] = pod.Namespace
		}
	}
	return env
}

// KillControllers kills the processes of the controller Pods of namespace
// ns at once (SIGKILL, as the kernel's OOM killer or a node failure
// would), and returns those Pods.
func (f *Fleet) KillControllers(ns string) ([]types.NamespacedName, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var killed []types.NamespacedName
	for key, p := range f.controllers {
		if key.Namespace != ns {
			continue
		}
		if err := syscall.Kill(p.PID(), syscall.SIGKILL); err != nil {
			return killed, fmt.Errorf("killing controller %s: %w", key, err)
		}
		killed = append(killed, key)
	}
	return killed, nil
}

// SetControllerKubeconfig has the controller Pods started from now on reach
// the API server with kubeconfig.
func (f *Fleet) SetControllerKubeconfig(kubeconfig string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.controllerKubeconfig = kubeconfig
}
