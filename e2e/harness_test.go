package e2e

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"isobar.dev/e2e/harness"
)

// kube-controller-manager really runs: a Deployment gets Pods, and deleting
// it garbage-collects them through their ownerReferences.
func TestControllerManager(t *testing.T) {
	ns := namespace(t)
	ctx, cancel := harness.Context()
	defer cancel()
	labels := map[string]string{"app": "probe"}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "probe"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](2),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "example.invalid/probe:1"}}},
			},
		},
	}
	if err := env.Client.Create(ctx, d); err != nil {
		t.Fatal(err)
	}
	pods := func() int {
		var list corev1.PodList
		if err := env.Client.List(ctx, &list, client.InNamespace(ns), client.MatchingLabels(labels)); err != nil {
			t.Fatal(err)
		}
		return len(list.Items)
	}
	eventually(t, 30*time.Second, "the Deployment's 2 Pods", func() bool { return pods() == 2 })
	if err := env.Client.Delete(ctx, d, client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "the Pods to be garbage collected", func() bool { return pods() == 0 })
}

// The harness installs the Gateway API CRDs as released, bundle-version
// annotation included (the operator reports it as SupportedVersion), and
// ours with its printer columns.
func TestInstalledCRDs(t *testing.T) {
	ctx, cancel := harness.Context()
	defer cancel()
	gw := &apiextensionsv1.CustomResourceDefinition{}
	if err := env.Client.Get(ctx, keyOf("", "gateways.gateway.networking.k8s.io"), gw); err != nil {
		t.Fatal(err)
	}
	if v := gw.Annotations["gateway.networking.k8s.io/bundle-version"]; v != "v1.6.3" {
		t.Errorf("Gateway CRD bundle-version = %q, want v1.6.3", v)
	}
	if ch := gw.Annotations["gateway.networking.k8s.io/channel"]; ch != env.Channel {
		t.Errorf("Gateway CRD channel = %q, want %s", ch, env.Channel)
	}
	cd := &apiextensionsv1.CustomResourceDefinition{}
	if err := env.Client.Get(ctx, keyOf("", "contourdeployments.isobar.dev"), cd); err != nil {
		t.Fatal(err)
	}
	var columns []string
	for _, c := range cd.Spec.Versions[0].AdditionalPrinterColumns {
		columns = append(columns, c.Name)
	}
	if got, want := strings.Join(columns, ","), "Envoy,Publishing,Accepted,Gateways,Age"; got != want {
		t.Errorf("printer columns = %s, want %s", got, want)
	}
	if cd.Spec.Scope != apiextensionsv1.NamespaceScoped {
		t.Errorf("scope = %s, want Namespaced", cd.Spec.Scope)
	}
}

// Every sample a user is pointed at is accepted by the API server as it is.
func TestSamplesAreAccepted(t *testing.T) {
	root, err := harness.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	objs, err := harness.KustomizeObjects(root + "/config/samples")
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) < 5 {
		t.Fatalf("config/samples has %d objects, want at least 5", len(objs))
	}
	ctx, cancel := harness.Context()
	defer cancel()
	for _, o := range objs {
		if ns := o.GetNamespace(); ns != "" {
			nsObj := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}
			if err := env.Client.Create(ctx, nsObj); err != nil && !strings.Contains(err.Error(), "already exists") {
				t.Fatal(err)
			}
		}
		t.Cleanup(func() {
			ctx, cancel := harness.Context()
			defer cancel()
			_ = env.Client.Delete(ctx, o)
		})
		if err := env.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(o), client.FieldOwner("samples-test")); err != nil {
			t.Errorf("%s %s/%s: %v", o.GetKind(), o.GetNamespace(), o.GetName(), err)
		}
	}
}

// The binaries build, start against the API server, report ready, and stop
// cleanly on SIGTERM, as a kubelet would stop them.
func TestBinariesRun(t *testing.T) {
	bin, err := env.Binaries()
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin+"/isobar-controller", "version").CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), "isobar-controller ") {
		t.Errorf("isobar-controller version: %v\n%s", err, out)
	}

	kubeconfig, err := env.Kubeconfig("isobar-operator")
	if err != nil {
		t.Fatal(err)
	}
	health := harness.FreePortString(t)
	op, err := harness.StartProcessEnv(env.Dir, []string{"KUBECONFIG=" + kubeconfig}, bin+"/isobar-operator",
		"--health-probe-bind-address=127.0.0.1:"+health,
		"--metrics-bind-address=0",
		"--log-format=console",
	)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _, _ = op.Stop(10 * time.Second) }()
	waitReady(t, op, "http://127.0.0.1:"+health+"/readyz", 30*time.Second)
	code, err := op.Stop(10 * time.Second)
	if err != nil || code != 0 {
		t.Errorf("isobar-operator stopped with code %d, %v\n%s", code, err, op.Output())
	}
}

// eventually polls cond until it holds or timeout passes.
func eventually(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// tetherChild is set in the copy of the test binary that
// TestChildrenDieWithTheTestBinary starts and kills.
const tetherChild = "ISOBAR_TETHER_CHILD"

// Processes the harness starts die with the test binary, even when it is
// killed (a test timeout, a Ctrl-C): our binaries directly, etcd and
// kube-apiserver through the tethering wrappers envtest runs.
func TestChildrenDieWithTheTestBinary(t *testing.T) {
	if dir := os.Getenv(tetherChild); dir != "" {
		tetheredChildren(dir)
		return
	}
	dir := t.TempDir()
	child := exec.Command(os.Args[0], "-test.run=^TestChildrenDieWithTheTestBinary$")
	child.Env = append(os.Environ(), tetherChild+"="+dir)
	out, err := child.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	var pids []int
	scanner := bufio.NewScanner(out)
	for len(pids) < 2 && scanner.Scan() {
		if pid, err := strconv.Atoi(strings.TrimPrefix(scanner.Text(), "pid ")); err == nil && strings.HasPrefix(scanner.Text(), "pid ") {
			pids = append(pids, pid)
		}
	}
	if len(pids) != 2 {
		_ = child.Process.Kill()
		t.Fatalf("the child test binary reported pids %v, want 2", pids)
	}
	alive := func(pid int) bool { return syscall.Kill(pid, 0) == nil }
	for _, pid := range pids {
		if !alive(pid) {
			t.Fatalf("process %d is not running before the test binary is killed", pid)
		}
	}
	if err := child.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = child.Wait()
	eventually(t, 10*time.Second, fmt.Sprintf("processes %v to die with the test binary", pids), func() bool {
		for _, pid := range pids {
			if alive(pid) {
				return false
			}
		}
		return true
	})
}

// tetheredChildren starts a process as the harness starts our binaries and
// one through a tethering wrapper as envtest starts etcd, prints their
// pids, and waits to be killed.
func tetheredChildren(dir string) {
	direct, err := harness.StartProcess(dir, "/bin/sleep", "300")
	if err != nil {
		panic(err)
	}
	bin := filepath.Join(dir, "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		panic(err)
	}
	if err := os.Symlink("/bin/sleep", filepath.Join(bin, "etcd")); err != nil {
		panic(err)
	}
	tethered, err := harness.Tether(bin, filepath.Join(dir, "tethered"), "etcd")
	if err != nil {
		panic(err)
	}
	wrapped := exec.Command(filepath.Join(tethered, "etcd"), "300")
	if err := wrapped.Start(); err != nil {
		panic(err)
	}
	// Report it once the wrapper has handed over to the real binary, as
	// etcd has long before a test could be killed.
	sleep, _ := filepath.EvalSymlinks("/bin/sleep")
	for {
		if exe, _ := os.Readlink(fmt.Sprintf("/proc/%d/exe", wrapped.Process.Pid)); exe == sleep {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	fmt.Printf("pid %d\npid %d\n", direct.PID(), wrapped.Process.Pid)
	select {}
}
