package conformance

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	xv1alpha1 "sigs.k8s.io/gateway-api/apisx/v1alpha1"

	fleetapi "isobar.dev/api/fleet"
	"isobar.dev/api/imagetag"
	"isobar.dev/api/v1alpha1"
	"isobar.dev/e2e/harness"
	"isobar.dev/e2e/rig"
	"isobar.dev/operator/pkg/rollout"
)

// TestUpgradeRollsInOrder upgrades the operator, as OLM or kubectl apply
// would (a new operator with new images: controller images of two
// releases, built as make images builds them, whose Pods run the binary
// each image holds), on two running fleets of one class, then rolls it back, then upgrades it to a release whose
// controller never comes up, and back; and last upgrades it with both
// fleets allowed to roll at once. Pods are Ready only once what they
// run is (the controller's /readyz, an Envoy with its configuration). The
// order is read from the API server's Pod events: in each fleet the new
// controller is Ready before any Envoy Pod changes; the class rolls one
// fleet at a time (spec.rollout.maxFleets 1); traffic through the
// simulated Envoys never fails.
func TestUpgradeRollsInOrder(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster")
	}
	const (
		oldEnvoy = "docker.io/envoyproxy/envoy:distroless-v1.37.0"
		newEnvoy = "docker.io/envoyproxy/envoy:distroless-v1.40.0"
		broken   = "example.com/isobar/isobar-controller" + rig.BrokenTag
		ns       = "upgrade"
		host     = "upgrade.example.com"
	)
	images := buildReleases(t, "v0.1.0", "v0.1.1")
	imageA, imageB := images[0].ref, images[1].ref
	r := rig.StartWith(t, rig.Options{Channel: "experimental", Probe: true, OperatorArgs: []string{"--controller-image=" + imageA}})
	for _, img := range images {
		r.Fleet.AddImage(img.ref, img.binary)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	// The fleets start on the oldest Envoy supported.
	setProfile(t, ctx, r, func(spec *v1alpha1.ContourDeploymentSpec) { spec.Envoy.Image = oldEnvoy })

	gateway := func(name string) *gatewayv1.Gateway {
		return &gatewayv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: gatewayv1.GatewaySpec{
			GatewayClassName: gatewayClassName,
			Listeners:        []gatewayv1.Listener{{Name: "http", Protocol: gatewayv1.HTTPProtocolType, Port: 80}},
		}}
	}
	route := &gatewayv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "echo"}, Spec: gatewayv1.HTTPRouteSpec{
		CommonRouteSpec: gatewayv1.CommonRouteSpec{ParentRefs: []gatewayv1.ParentReference{{Name: "web"}, {Name: "api"}}},
		Hostnames:       []gatewayv1.Hostname{host},
		Rules: []gatewayv1.HTTPRouteRule{{BackendRefs: []gatewayv1.HTTPBackendRef{{BackendRef: gatewayv1.BackendRef{BackendObjectReference: gatewayv1.BackendObjectReference{
			Name: "echo", Port: ptr.To[gatewayv1.PortNumber](8080)}}}}}},
	}}
	// A retry budget, whose interval Envoy knows from v1.39 on.
	budget := &xv1alpha1.XBackendTrafficPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "budget"}, Spec: xv1alpha1.BackendTrafficPolicySpec{
		TargetRefs:      []xv1alpha1.LocalPolicyTargetReference{{Kind: "Service", Name: "echo"}},
		RetryConstraint: &xv1alpha1.RetryConstraint{Budget: &xv1alpha1.BudgetDetails{Percent: ptr.To(30), Interval: ptr.To(gatewayv1.Duration("5s"))}},
	}}
	createWithEcho(t, ctx, r, ns, 1, []client.Object{&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, gateway("web"), gateway("api"), route, budget})
	gateways := []string{"web", "api"}
	addresses := map[string]string{}
	for _, name := range gateways {
		addresses[name] = gatewayAddress(t, ctx, r, types.NamespacedName{Namespace: ns, Name: name})
		awaitEcho(t, ctx, addresses[name], host, "/", "the echo Pod through Gateway "+name)
	}
	awaitRolled(t, ctx, r, ns, gateways, imageA)
	checkReleases(t, ctx, r, ns, oldEnvoy)

	events := watchUpgrade(t, ctx, r, ns)
	traffic := sendTraffic(ctx, addresses, host)

	for _, step := range []struct{ name, image string }{{"upgrade", imageB}, {"rollback", imageA}} {
		mark := events.mark()
		r.StopOperator(t)
		r.StartOperator(t, "--controller-image="+step.image)
		awaitRolled(t, ctx, r, ns, gateways, step.image)
		checkOrder(t, step.name, events.since(mark), step.image)
	}

	// A release whose controller never comes up: the first fleet's
	// Envoys keep their images, the Gateway says why, the other fleet
	// waits; going back to the running release finishes both.
	mark := events.mark()
	r.StopOperator(t)
	r.StartOperator(t, "--controller-image="+broken)
	var first, second string
	awaitCondition(t, ctx, r, ns, func(gws map[string]*metav1.Condition) bool {
		for _, name := range gateways {
			other := gateways[1-slices.Index(gateways, name)]
			c, q := gws[name], gws[other]
			if c != nil && q != nil && c.Reason == v1alpha1.ReasonRollingOut && q.Reason == v1alpha1.ReasonRolloutQueued {
				first, second = name, other
				return strings.Contains(c.Message, "keeps "+imageA) && strings.Contains(q.Message, rollout.FleetName(ns, name))
			}
		}
		return false
	}, "one fleet rolling to the broken release with its Envoys kept, the other queued behind it")
	time.Sleep(5 * time.Second) // time enough for a wrong Envoy change to show
	for _, name := range gateways {
		if got := envoyImages(t, ctx, r, ns, name); !slices.Contains(got, imageA) || slices.Contains(got, broken) {
			t.Errorf("Gateway %s: the Envoy DaemonSet runs %v while its controller cannot come up; want %s kept", name, got, imageA)
		}
	}
	for _, e := range events.since(mark) {
		if e.component == rig.EnvoyComponent && e.image == broken {
			t.Errorf("an Envoy Pod of the broken release: %s", e)
		}
		if e.gateway == second && e.image == broken {
			t.Errorf("Gateway %s rolls while %s, rolling first, cannot: %s", second, first, e)
		}
	}
	r.StopOperator(t)
	r.StartOperator(t, "--controller-image="+imageA)
	awaitRolled(t, ctx, r, ns, gateways, imageA)

	// With spec.rollout.maxFleets 2, both fleets roll at once, to a new
	// controller and the newest Envoy, which is sent the budget's
	// interval.
	r.StopOperator(t)
	setProfile(t, ctx, r, func(spec *v1alpha1.ContourDeploymentSpec) {
		spec.Rollout.MaxFleets = 2
		spec.Envoy.Image = newEnvoy
	})
	mark = events.mark()
	r.StartOperator(t, "--controller-image="+imageB)
	awaitRolled(t, ctx, r, ns, gateways, imageB)
	checkReleases(t, ctx, r, ns, newEnvoy)
	rolled := events.since(mark)
	firstReady := slices.IndexFunc(rolled, func(e podEvent) bool { return e.component == rig.EnvoyComponent && e.image == imageB && e.ready })
	for _, name := range gateways {
		if start := slices.IndexFunc(rolled, func(e podEvent) bool { return e.gateway == name && e.image == imageB }); start > firstReady {
			t.Errorf("maxFleets 2: fleet %s started rolling (event %d) after a fleet had finished (event %d):\n%s", name, start, firstReady, eventList(rolled))
		}
	}

	sent, failed := traffic.stop()
	t.Logf("%d requests through the two Gateways during the rollouts", sent)
	if sent < 100 {
		t.Errorf("only %d requests were sent during the rollouts", sent)
	}
	for _, f := range failed {
		t.Errorf("a request failed during a rollout: %s", f)
	}
}

// release is a controller image built as make images builds it, and the
// binary unpacked from it.
type release struct{ ref, binary string }

// buildReleases builds the controller image of each version, as make
// images does (hack/images: a static binary reporting the version, alone
// on an empty base), unpacks its entrypoint as a container runtime would,
// and checks that it reports the version the image is tagged with.
func buildReleases(t *testing.T, versions ...string) []release {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	var out []release
	for _, v := range versions {
		dir := filepath.Join("bin", "e2e-images", v)
		cmd := exec.Command("go", "run", "./hack/images", "-root", root, "-prefix", "example.com/isobar", "-version", v, "-out", dir)
		cmd.Dir = root
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("building the images of %s: %v\n%s", v, err, b)
		}
		ref, binary, err := harness.ImageBinary(filepath.Join(root, dir, "isobar-controller-"+v+".tar"), t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		got, err := exec.Command(binary, "--version").Output()
		if err != nil || !strings.HasPrefix(string(got), "isobar-controller "+v) {
			t.Fatalf("the controller of image %s reports %q (%v), want release %s", ref, got, err, v)
		}
		out = append(out, release{ref: ref, binary: binary})
	}
	return out
}

// setProfile changes the class's profile.
func setProfile(t *testing.T, ctx context.Context, r *rig.Rig, change func(*v1alpha1.ContourDeploymentSpec)) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		profile := &v1alpha1.ContourDeployment{}
		if err := r.Env.Client.Get(ctx, types.NamespacedName{Namespace: "isobar-system", Name: "conformance"}, profile); err != nil {
			return err
		}
		change(&profile.Spec)
		return r.Env.Client.Update(ctx, profile)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// checkReleases checks the simulated Envoys of the namespace's fleets: each
// plays the release of envoyImage, was sent nothing that release does not
// know, and holds the echo Service's retry budget, with its interval only
// from Envoy v1.39 on.
func checkReleases(t *testing.T, ctx context.Context, r *rig.Rig, ns, envoyImage string) {
	t.Helper()
	release, _ := imagetag.Of(envoyImage)
	var pods corev1.PodList
	if err := r.Env.Client.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{rig.ComponentLabel: rig.EnvoyComponent}); err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, p := range pods.Items {
		e := r.Fleet.Envoy(types.NamespacedName{Namespace: p.Namespace, Name: p.Name})
		if e == nil {
			t.Errorf("Envoy Pod %s runs no simulated Envoy", p.Name)
			continue
		}
		if e.Release() != release {
			t.Errorf("Envoy Pod %s plays %s, want %s", p.Name, e.Release(), release)
		}
		for _, u := range e.Unknown() {
			t.Errorf("Envoy %s of Pod %s was sent what it does not know: %s", e.Release(), p.Name, u)
		}
		budgets, intervals := 0, 0
		for _, m := range e.Resources(resourcev3.ClusterType) {
			for _, th := range m.(*clusterv3.Cluster).GetCircuitBreakers().GetThresholds() {
				if rb := th.GetRetryBudget(); rb != nil {
					budgets++
					if rb.GetBudgetInterval() != nil {
						intervals++
					}
				}
			}
		}
		wantIntervals := 0
		if !release.Less(imagetag.Version{Major: 1, Minor: 39}) {
			wantIntervals = budgets
		}
		if budgets == 0 || intervals != wantIntervals {
			t.Errorf("Envoy %s of Pod %s holds %d retry budgets, %d with an interval; want some, %d with one", release, p.Name, budgets, intervals, wantIntervals)
		}
		checked++
	}
	t.Logf("%d Envoys of %s checked", checked, release)
}

// awaitRolled waits for each fleet to run image in its controller and its
// Envoys, rolled out, and the Gateway to say Provisioned.
func awaitRolled(t *testing.T, ctx context.Context, r *rig.Rig, ns string, gateways []string, image string) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Minute); ; time.Sleep(time.Second) {
		done := true
		var why []string
		for _, name := range gateways {
			gw := &gatewayv1.Gateway{}
			if err := r.Env.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, gw); err != nil {
				t.Fatal(err)
			}
			c := meta.FindStatusCondition(gw.Status.Conditions, v1alpha1.GatewayConditionProvisioned)
			var deps appsv1.DeploymentList
			var dss appsv1.DaemonSetList
			sel := client.MatchingLabels{fleetapi.LabelGatewayName: name}
			if err := r.Env.Client.List(ctx, &deps, client.InNamespace(ns), sel); err != nil {
				t.Fatal(err)
			}
			if err := r.Env.Client.List(ctx, &dss, client.InNamespace(ns), sel); err != nil {
				t.Fatal(err)
			}
			ok := c != nil && c.Status == metav1.ConditionTrue && len(deps.Items) == 1 && len(dss.Items) == 1
			var pods corev1.PodList
			if err := r.Env.Client.List(ctx, &pods, client.InNamespace(ns), sel); err != nil {
				t.Fatal(err)
			}
			for _, p := range pods.Items {
				// Every Pod of the fleet runs image: the old ones are
				// gone, not only replaced in the workloads' status.
				ok = ok && p.DeletionTimestamp == nil && slices.Contains(rollout.Images(corev1.PodTemplateSpec{Spec: p.Spec}), image)
			}
			if ok {
				d, ds := &deps.Items[0], &dss.Items[0]
				depDone, _, _ := rollout.DeploymentRolledOut(d)
				dsDone, _ := rollout.DaemonSetRolledOut(ds)
				ok = depDone && dsDone && slices.Contains(rollout.Images(d.Spec.Template), image) && slices.Contains(rollout.Images(ds.Spec.Template), image) && d.Labels[rollout.Label] == ""
			}
			if !ok {
				done = false
				why = append(why, fmt.Sprintf("%s: %+v", name, c))
			}
		}
		if done {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("fleets not rolled to %s in 5 minutes: %s", image, strings.Join(why, "; "))
		}
	}
}

// awaitCondition waits for the Gateways' Provisioned conditions to be as
// ok wants.
func awaitCondition(t *testing.T, ctx context.Context, r *rig.Rig, ns string, ok func(map[string]*metav1.Condition) bool, want string) {
	t.Helper()
	for deadline := time.Now().Add(3 * time.Minute); ; time.Sleep(500 * time.Millisecond) {
		var list gatewayv1.GatewayList
		if err := r.Env.Client.List(ctx, &list, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		got := map[string]*metav1.Condition{}
		for i := range list.Items {
			got[list.Items[i].Name] = meta.FindStatusCondition(list.Items[i].Status.Conditions, v1alpha1.GatewayConditionProvisioned)
		}
		if ok(got) {
			return
		}
		if time.Now().After(deadline) {
			var s []string
			for name, c := range got {
				s = append(s, fmt.Sprintf("%s: %+v", name, c))
			}
			t.Fatalf("not %s in 3 minutes: %s", want, strings.Join(s, "; "))
		}
	}
}

func envoyImages(t *testing.T, ctx context.Context, r *rig.Rig, ns, gateway string) []string {
	t.Helper()
	var dss appsv1.DaemonSetList
	if err := r.Env.Client.List(ctx, &dss, client.InNamespace(ns), client.MatchingLabels{fleetapi.LabelGatewayName: gateway}); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, ds := range dss.Items {
		out = append(out, rollout.Images(ds.Spec.Template)...)
	}
	return out
}

// podEvent is one change of a fleet's Pod as the API server told it.
type podEvent struct {
	kind      watch.EventType
	gateway   string
	component string
	pod       string
	image     string // the controller's image: the controller container's, or the Envoy Pod's bootstrap's
	ready     bool
	deleting  bool
}

func (e podEvent) String() string {
	return fmt.Sprintf("%s %s %s Pod %s (%s) ready=%t deleting=%t", e.kind, e.gateway, e.component, e.pod, e.image, e.ready, e.deleting)
}

// podEvents records the Pod events of a namespace in the order of the
// API server's watch.
type podEvents struct {
	mu     sync.Mutex
	events []podEvent
}

func (p *podEvents) mark() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.events)
}

func (p *podEvents) since(mark int) []podEvent {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.events[mark:])
}

func watchUpgrade(t *testing.T, ctx context.Context, r *rig.Rig, ns string) *podEvents {
	t.Helper()
	cs, err := kubernetes.NewForConfig(r.Env.Config)
	if err != nil {
		t.Fatal(err)
	}
	// From the listing's version on: changes, not the Pods there are.
	list, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: fleetapi.LabelGatewayName})
	if err != nil {
		t.Fatal(err)
	}
	w, err := cs.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{LabelSelector: fleetapi.LabelGatewayName, ResourceVersion: list.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	p := &podEvents{}
	go func() {
		defer w.Stop()
		for ev := range w.ResultChan() {
			pod, ok := ev.Object.(*corev1.Pod)
			if !ok {
				continue
			}
			e := podEvent{kind: ev.Type, gateway: pod.Labels[fleetapi.LabelGatewayName], component: pod.Labels[rig.ComponentLabel], pod: pod.Name,
				deleting: pod.DeletionTimestamp != nil}
			for _, c := range slices.Concat(pod.Spec.InitContainers, pod.Spec.Containers) {
				if c.Name == "controller" || c.Name == "bootstrap" {
					e.image = c.Image
				}
			}
			for _, c := range pod.Status.Conditions {
				e.ready = e.ready || (c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue)
			}
			p.mu.Lock()
			p.events = append(p.events, e)
			p.mu.Unlock()
		}
	}()
	return p
}

// checkOrder checks the Pod events of one rollout to image: in each fleet
// no Envoy Pod is added or deleted before a controller Pod of image is
// Ready, and the second fleet adds no Pod of image before the first
// fleet's Envoy Pod of image is Ready.
func checkOrder(t *testing.T, step string, events []podEvent, image string) {
	t.Helper()
	controllerReady := map[string]int{}
	envoyReady := map[string]int{}
	var order []string
	for i, e := range events {
		if e.image == image && !slices.Contains(order, e.gateway) {
			order = append(order, e.gateway)
		}
		switch {
		case e.component == rig.ControllerComponent && e.image == image && e.ready:
			if _, ok := controllerReady[e.gateway]; !ok {
				controllerReady[e.gateway] = i
			}
		case e.component == rig.EnvoyComponent && e.image == image && e.ready:
			if _, ok := envoyReady[e.gateway]; !ok {
				envoyReady[e.gateway] = i
			}
		}
		if e.component == rig.EnvoyComponent && (e.kind == watch.Added || e.kind == watch.Deleted || e.deleting) {
			if _, ok := controllerReady[e.gateway]; !ok {
				t.Errorf("%s: an Envoy Pod changed before the fleet's controller of %s was Ready: %s", step, image, e)
			}
		}
	}
	if len(order) != 2 {
		t.Fatalf("%s: Pods of %s in %d fleets, want 2:\n%s", step, image, len(order), eventList(events))
	}
	for _, g := range order {
		if _, ok := envoyReady[g]; !ok {
			t.Errorf("%s: no Envoy Pod of %s became Ready in fleet %s", step, image, g)
		}
	}
	firstDone, secondStart := envoyReady[order[0]], slices.IndexFunc(events, func(e podEvent) bool { return e.gateway == order[1] && e.image == image })
	if secondStart < firstDone {
		t.Errorf("%s: fleet %s started rolling (event %d) before fleet %s finished (event %d), with maxFleets 1:\n%s", step, order[1], secondStart, order[0], firstDone, eventList(events))
	}
	t.Logf("%s to %s: %d Pod events; %s rolled first (controller Ready at event %d, Envoy Ready at %d), then %s (controller Ready at %d, Envoy Ready at %d)",
		step, image, len(events), order[0], controllerReady[order[0]], envoyReady[order[0]], order[1], controllerReady[order[1]], envoyReady[order[1]])
}

func eventList(events []podEvent) string {
	var b strings.Builder
	for i, e := range events {
		fmt.Fprintf(&b, "  %d %s\n", i, e)
	}
	return b.String()
}

// traffic sends GETs, one connection each, through Gateways until stopped.
type traffic struct {
	cancel context.CancelFunc
	done   chan struct{}
	sent   atomic.Int64
	mu     sync.Mutex
	failed []string
}

func sendTraffic(ctx context.Context, addresses map[string]string, host string) *traffic {
	ctx, cancel := context.WithCancel(ctx)
	tr := &traffic{cancel: cancel, done: make(chan struct{})}
	c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 10 * time.Second}
	var wg sync.WaitGroup
	for name, address := range addresses {
		wg.Go(func() {
			for ctx.Err() == nil {
				req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+address+"/", nil)
				if err != nil {
					tr.fail(err.Error())
					return
				}
				req.Host = host
				resp, err := c.Do(req)
				if ctx.Err() != nil {
					return
				}
				tr.sent.Add(1)
				switch {
				case err != nil:
					tr.fail(fmt.Sprintf("%s %s: %v", time.Now().Format(time.TimeOnly), name, err))
				default:
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode != http.StatusOK {
						tr.fail(fmt.Sprintf("%s %s: %s", time.Now().Format(time.TimeOnly), name, resp.Status))
					}
				}
				time.Sleep(50 * time.Millisecond)
			}
		})
	}
	go func() {
		wg.Wait()
		close(tr.done)
	}()
	return tr
}

func (tr *traffic) fail(s string) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	tr.failed = append(tr.failed, s)
}

// progress is what the traffic has come to so far: requests sent, and
// how many failed.
func (tr *traffic) progress() (int64, int) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return tr.sent.Load(), len(tr.failed)
}

func (tr *traffic) stop() (int64, []string) {
	tr.cancel()
	<-tr.done
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return tr.sent.Load(), tr.failed
}
