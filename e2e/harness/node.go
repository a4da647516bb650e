package harness

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
)

// NodeName is the one Node the agent stands for.
const NodeName = "isobar-node"

// PodRunner runs what a Pod stands for (a process, a simulated Envoy) and
// returns how to stop it; nil means the Pod runs nothing of ours. It is
// called once per Pod, when the agent starts it.
type PodRunner func(pod *corev1.Pod) (stop func(), err error)

// NodeAgent stands in for a kubelet on one Node, so that the API server's
// view of workloads is a real cluster's: it registers the Node (Ready,
// heartbeating), binds every unscheduled Pod to it (envtest has no
// scheduler), gives each an IP and reports it Running and Ready, so
// kube-controller-manager fills EndpointSlices with it, and removes Pods
// once they are terminating, as a kubelet does when their containers
// stopped. What a Pod runs is up to its PodRunner.
type NodeAgent struct {
	client kubernetes.Interface
	run    PodRunner
	// ready, when set, stands for the Pod's readiness probes: a started
	// Pod is Running but not Ready until it returns true.
	ready func(pod *corev1.Pod) bool

	mu      sync.Mutex
	block   *block
	ips     map[string]string // pod UID -> IP
	running map[string]func() // pod UID -> stop
	uids    map[string]string // namespace/name -> UID of the Pod running
	errs    []error
	// stopped is closed once ctx has ended and everything the runner
	// started has stopped.
	stopped chan struct{}
}

// Stopped is closed once the agent's context has ended and everything its
// PodRunner started has stopped (its Pod addresses are then free).
func (a *NodeAgent) Stopped() <-chan struct{} { return a.stopped }

// StartNodeAgent registers the Node and serves Pods until ctx ends, when it
// stops everything the PodRunner started. Pods are Ready once started.
func StartNodeAgent(ctx context.Context, cfg *rest.Config, run PodRunner) (*NodeAgent, error) {
	return StartProbingNodeAgent(ctx, cfg, run, nil)
}

// StartProbingNodeAgent is StartNodeAgent with readiness probes: a started
// Pod is Ready only once ready returns true for it, asked every 100ms, as
// a kubelet reports a Pod Ready once its readiness probes pass. What
// follows readiness (a Deployment's rollout, a Service's ready endpoints)
// then waits for what the Pod runs, as in a cluster.
func StartProbingNodeAgent(ctx context.Context, cfg *rest.Config, run PodRunner, ready func(pod *corev1.Pod) bool) (*NodeAgent, error) {
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	b, err := claimBlock()
	if err != nil {
		return nil, err
	}
	a := &NodeAgent{client: c, run: run, ready: ready, block: b, ips: map[string]string{}, running: map[string]func(){}, uids: map[string]string{}, stopped: make(chan struct{})}
	if err := a.register(ctx); err != nil {
		b.release()
		return nil, err
	}
	queue := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]())
	lw := toolscache.NewListWatchFromClient(c.CoreV1().RESTClient(), "pods", metav1.NamespaceAll, fields.Everything())
	informer := toolscache.NewSharedIndexInformer(lw, &corev1.Pod{}, 0, toolscache.Indexers{})
	enqueue := func(obj any) {
		if key, err := toolscache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
			queue.Add(key)
		}
	}
	if _, err := informer.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc: enqueue, UpdateFunc: func(_, o any) { enqueue(o) }, DeleteFunc: enqueue,
	}); err != nil {
		return nil, err
	}
	go informer.Run(ctx.Done())
	go a.heartbeat(ctx)
	go func() {
		<-ctx.Done()
		queue.ShutDown()
	}()
	go func() {
		for {
			key, quit := queue.Get()
			if quit {
				a.stopAll()
				a.block.release()
				close(a.stopped)
				return
			}
			obj, exists, err := informer.GetStore().GetByKey(key)
			if err == nil {
				var pod *corev1.Pod
				if exists {
					pod = obj.(*corev1.Pod)
				}
				err = a.sync(ctx, key, pod)
			}
			if err != nil && ctx.Err() == nil {
				queue.AddRateLimited(key)
			} else {
				queue.Forget(key)
			}
			queue.Done(key)
		}
	}()
	return a, nil
}

// Errors are what PodRunners returned; a Pod whose runner failed is left
// Pending.
func (a *NodeAgent) Errors() []error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]error(nil), a.errs...)
}

func (a *NodeAgent) register(ctx context.Context) error {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: NodeName, Labels: map[string]string{"kubernetes.io/hostname": NodeName, "kubernetes.io/os": "linux"}}}
	if _, err := a.client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("registering node %s: %w", NodeName, err)
	}
	return a.reportReady(ctx)
}

// reportReady writes the Node's Ready condition with a fresh heartbeat.
func (a *NodeAgent) reportReady(ctx context.Context) error {
	node, err := a.client.CoreV1().Nodes().Get(ctx, NodeName, metav1.GetOptions{})
	if err != nil {
		return err
	}
	now := metav1.Now()
	node.Status.Conditions = []corev1.NodeCondition{{
		Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", Message: "the test node agent is ready",
		LastHeartbeatTime: now, LastTransitionTime: now,
	}}
	node.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "127.0.0.1"}, {Type: corev1.NodeHostName, Address: NodeName}}
	node.Status.Capacity = corev1.ResourceList{corev1.ResourcePods: resource.MustParse("1000")}
	node.Status.Allocatable = node.Status.Capacity
	_, err = a.client.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{})
	return err
}

func (a *NodeAgent) heartbeat(ctx context.Context) {
	t := time.NewTicker(10 * time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			_ = a.reportReady(ctx)
		}
	}
}

// sync brings one Pod to where a kubelet would: bound, running and ready,
// or gone once terminating.
func (a *NodeAgent) sync(ctx context.Context, key string, pod *corev1.Pod) error {
	if pod == nil {
		a.mu.Lock()
		uid := a.uids[key]
		a.mu.Unlock()
		a.stop(uid)
		return nil
	}
	pods := a.client.CoreV1().Pods(pod.Namespace)
	switch {
	case pod.DeletionTimestamp != nil:
		a.stop(string(pod.UID))
		err := pods.Delete(ctx, pod.Name, metav1.DeleteOptions{GracePeriodSeconds: ptrTo[int64](0), Preconditions: &metav1.Preconditions{UID: &pod.UID}})
		if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
			return nil
		}
		return err
	case pod.Spec.NodeName == "":
		return pods.Bind(ctx, &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: pod.Name, UID: pod.UID}, Target: corev1.ObjectReference{Kind: "Node", Name: NodeName}}, metav1.CreateOptions{})
	case pod.Spec.NodeName != NodeName || pod.Status.Phase == corev1.PodRunning:
		return nil
	}
	// The runner sees the Pod with its IP, as a container sees its
	// network from the start.
	ip, err := a.ip(string(pod.UID))
	if err != nil {
		a.mu.Lock()
		a.errs = append(a.errs, fmt.Errorf("pod %s: %w", key, err))
		a.mu.Unlock()
		return nil // left Pending; the error is in Errors
	}
	pod = pod.DeepCopy()
	pod.Status.HostIP, pod.Status.PodIP = "127.0.0.1", ip
	pod.Status.HostIPs, pod.Status.PodIPs = []corev1.HostIP{{IP: "127.0.0.1"}}, []corev1.PodIP{{IP: ip}}
	if err := a.start(key, pod); err != nil {
		if _, pending := errors.AsType[*MountPending](err); pending {
			return err // retried, as the kubelet retries a mount
		}
		return nil // left Pending; the error is in Errors
	}
	now := metav1.Now()
	pod.Status.StartTime = &now
	setRunning(pod, a.ready == nil, now)
	if _, err := pods.UpdateStatus(ctx, pod, metav1.UpdateOptions{}); err != nil {
		return err
	}
	if a.ready != nil {
		go a.probe(ctx, pod)
	}
	return nil
}

// setRunning gives pod the status of a running Pod, ready or not.
func setRunning(pod *corev1.Pod, ready bool, now metav1.Time) {
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	pod.Status.Phase = corev1.PodRunning
	pod.Status.Conditions = []corev1.PodCondition{
		{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: now},
		{Type: corev1.PodInitialized, Status: corev1.ConditionTrue, LastTransitionTime: now},
		{Type: corev1.ContainersReady, Status: status, LastTransitionTime: now},
		{Type: corev1.PodReady, Status: status, LastTransitionTime: now},
	}
	pod.Status.ContainerStatuses = nil
	for _, c := range pod.Spec.Containers {
		pod.Status.ContainerStatuses = append(pod.Status.ContainerStatuses, corev1.ContainerStatus{
			Name: c.Name, Image: c.Image, ImageID: c.Image, Ready: ready, Started: ptrTo(true),
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: *pod.Status.StartTime}},
		})
	}
}

// probe reports pod Ready once the agent's ready says so, while it runs.
func (a *NodeAgent) probe(ctx context.Context, pod *corev1.Pod) {
	uid := string(pod.UID)
	for !a.ready(pod) {
		select {
		case <-ctx.Done():
			return
		case <-time.After(100 * time.Millisecond):
		}
		a.mu.Lock()
		_, running := a.running[uid]
		a.mu.Unlock()
		if !running {
			return
		}
	}
	pods := a.client.CoreV1().Pods(pod.Namespace)
	for ctx.Err() == nil {
		live, err := pods.Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil || live.UID != pod.UID || live.DeletionTimestamp != nil {
			return
		}
		setRunning(live, true, metav1.Now())
		if _, err := pods.UpdateStatus(ctx, live, metav1.UpdateOptions{}); err == nil || !apierrors.IsConflict(err) {
			return
		}
	}
}

// start runs the Pod's runner once.
func (a *NodeAgent) start(key string, pod *corev1.Pod) error {
	uid := string(pod.UID)
	a.mu.Lock()
	_, started := a.running[uid]
	a.mu.Unlock()
	if started || a.run == nil {
		return nil
	}
	stop, err := a.run(pod)
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, pending := errors.AsType[*MountPending](err); pending {
		return err
	}
	if err != nil {
		a.errs = append(a.errs, fmt.Errorf("pod %s/%s: %w", pod.Namespace, pod.Name, err))
		return err
	}
	if stop == nil {
		stop = func() {}
	}
	a.running[uid] = stop
	a.uids[key] = uid
	return nil
}

// stop stops what the Pod of a UID runs, if anything.
func (a *NodeAgent) stop(uid string) {
	a.mu.Lock()
	stop := a.running[uid]
	delete(a.running, uid)
	a.mu.Unlock()
	if stop != nil {
		stop()
	}
}

// stopAll stops what the runner started, every Pod at once, as a node
// going away stops its containers: each stop may wait for its process to
// exit.
func (a *NodeAgent) stopAll() {
	a.mu.Lock()
	running := a.running
	a.running = map[string]func(){}
	a.mu.Unlock()
	var wg sync.WaitGroup
	for _, stop := range running {
		wg.Go(stop)
	}
	wg.Wait()
}

// ip gives a Pod an address of its own, the same for as long as it lives,
// and no other Pod's on this machine (see block).
func (a *NodeAgent) ip(uid string) (string, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if ip, ok := a.ips[uid]; ok {
		return ip, nil
	}
	ip, err := a.block.take()
	if err != nil {
		return "", err
	}
	a.ips[uid] = ip
	return ip, nil
}

func ptrTo[T any](v T) *T { return &v }
