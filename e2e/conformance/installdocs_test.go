package conformance

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"isobar.dev/e2e/harness"
	"isobar.dev/e2e/rig"
	"isobar.dev/operator/pkg/render"
)

// standardInstallURL is the release asset docs/install.md applies first; the
// test applies the same CRDs from the gateway-api module, as no network is
// reachable here.
const standardInstallURL = "https://github.com/kubernetes-sigs/gateway-api/releases/download/v1.6.3/standard-install.yaml"

// simulatedLoadBalancerIP is what the test writes into the Envoy Service's
// status, standing in for the cloud's load balancer (TEST-NET-1).
const simulatedLoadBalancerIP = "192.0.2.10"

// docStep is what the test does with one command line of docs/install.md:
// run it as written (after rewrite, when set) until its output satisfies
// until, or skip it for the reason given.
type docStep struct {
	skip    string
	rewrite func(line string) string
	before  func(ctx context.Context) error
	until   func(out string) bool
	after   func(ctx context.Context) error
}

// TestInstallDocs runs the command lines of docs/install.md and
// docs/quickstart.md, each document on a cluster of its own, in the order
// the document gives them, with the real kubectl (built by
// hack/envtest/build.sh) against a cluster that has no CRD installed: the
// Gateway API's, then config/default (whose operator Deployment the node
// agent runs as the real isobar-operator, as its ServiceAccount), then the
// samples, whose fleet the operator provisions and the node agent runs
// (the controllers for real, Envoy simulated); then the uninstall. Every
// command line of a document must be known here, run or skipped with its
// reason, so that a line added to a document is not left untried.
func TestInstallDocs(t *testing.T) {
	if ch := os.Getenv(harness.ChannelVariable); ch != "" && ch != "standard" {
		t.Skipf("the documents install the standard channel's CRDs; the test runs once, on that channel's pass (this is %s)", ch)
	}
	root, err := harness.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	assets, err := harness.BinaryAssets()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(assets, "kubectl")); err != nil {
		t.Fatalf("kubectl (hack/envtest/build.sh builds it): %v", err)
	}
	gwDir, err := harness.GatewayAPICRDs("standard")
	if err != nil {
		t.Fatal(err)
	}
	standardInstall, omit := releaseInstall(t, gwDir)
	ours, err := harness.IsobarCRDs()
	if err != nil {
		t.Fatal(err)
	}
	for _, crd := range ours {
		omit = append(omit, crd.Name)
	}
	used := map[string]bool{}
	for _, doc := range []string{"install.md", "quickstart.md"} {
		t.Run(doc, func(t *testing.T) {
			r := rig.StartWith(t, rig.Options{Channel: "standard", Probe: true, Bare: true, Omit: omit})
			kubeconfig, err := r.Env.Kubeconfig("docs-reader")
			if err != nil {
				t.Fatal(err)
			}
			steps := docSteps(r.Env.Client, standardInstall)
			for _, line := range docLines(t, filepath.Join(root, "docs", doc)) {
				command := withoutComment(line)
				step, ok := steps[command]
				if !ok {
					t.Fatalf("docs/%s has a command line this test does not know; add it to docSteps: %q", doc, command)
				}
				used[command] = true
				if step.skip != "" {
					t.Logf("skipped %q: %s", command, step.skip)
					continue
				}
				runDocStep(t, root, assets, kubeconfig, line, step)
			}
		})
	}
	if t.Failed() {
		return
	}
	for command := range docSteps(nil, "") {
		if !used[command] {
			t.Errorf("no document has %q any longer: take it out of docSteps", command)
		}
	}
}

// runDocStep runs one line of a document as step says.
func runDocStep(t *testing.T, root, assets, kubeconfig, line string, step docStep) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if step.before != nil {
		if err := step.before(ctx); err != nil {
			t.Fatalf("before %q: %v", line, err)
		}
	}
	run := line
	if step.rewrite != nil {
		run = step.rewrite(line)
	}
	out, err := runDocLine(ctx, root, assets, kubeconfig, run, step.until)
	if err != nil {
		t.Fatalf("%s\n%s\n%v", run, out, err)
	}
	t.Logf("$ %s\n%s", run, out)
	if step.after != nil {
		if err := step.after(ctx); err != nil {
			t.Fatalf("after %q: %v", line, err)
		}
	}
}

// docSteps are the command lines of the documents, without their
// comments, and what the test does with each on the cluster c, whose
// standard-install.yaml is at standardInstall.
func docSteps(c client.Client, standardInstall string) map[string]docStep {
	noCluster := "needs a container runtime, kind or a registry, none of which is here; hack/images' tests build the images and the bundle image"
	gateway := types.NamespacedName{Namespace: "default", Name: "web"}
	return map[string]docStep{
		"kubectl apply --server-side -f " + standardInstallURL: {
			rewrite: func(l string) string { return strings.Replace(l, standardInstallURL, standardInstall, 1) },
		},
		"make demo":   {skip: "runs a cluster of its own; TestDemo (hack/demo) runs it"},
		"make images": {skip: noCluster},
		"kind load image-archive bin/images/isobar-operator-v0.1.0.tar":                                                       {skip: noCluster},
		"kind load image-archive bin/images/isobar-controller-v0.1.0.tar":                                                     {skip: noCluster},
		"make images IMG_PREFIX=registry.example.com/platform":                                                                {skip: noCluster},
		"crane push bin/images/isobar-operator-v0.1.0.tar registry.example.com/platform/isobar-operator:v0.1.0":               {skip: noCluster},
		"crane push bin/images/isobar-controller-v0.1.0.tar registry.example.com/platform/isobar-controller:v0.1.0":           {skip: noCluster},
		"kubectl apply --server-side -k config/default":                                                                       {},
		"kubectl apply -k config/default":                                                                                     {},
		"make deploy IMG_PREFIX=registry.example.com/platform":                                                                {skip: "the alternative to the line before, with images pushed to a registry: " + noCluster},
		"kubectl -n isobar-system rollout status deployment/isobar-operator":                                                  {until: contains("successfully rolled out")},
		"make images bundle-image IMG_PREFIX=registry.example.com/platform":                                                   {skip: noCluster},
		"crane push bin/images/isobar-operator-bundle-v0.1.0.tar registry.example.com/platform/isobar-operator-bundle:v0.1.0": {skip: noCluster},
		"operator-sdk run bundle registry.example.com/platform/isobar-operator-bundle:v0.1.0 --namespace operators":           {skip: "needs OLM on the cluster; TestOLMInstall installs the bundle's CSV as OLM would"},
		"kubectl apply -k config/samples":                                                                                     {},
		"kubectl get gatewayclass isobar":                                                                                     {until: column("isobar", map[int]string{2: "True"})},
		"kubectl get gateway web -o wide": {
			// No cloud here: the test plays the load balancer.
			before: func(ctx context.Context) error { return playLoadBalancer(ctx, c, gateway) },
			until:  column("web", map[int]string{2: simulatedLoadBalancerIP, 3: "True"}),
		},
		// From files alone the backends have no endpoints, as the
		// quickstart says.
		"go run ./controller/cmd/isobar-controller explain -f config/samples --request 'GET http://app.example.com/api/users' -H 'x-user: 42'": {
			until: contains("why: no endpoints"),
		},
		"kubectl get gateways -A": {until: column("web", map[int]string{1: "isobar"})},
		"kubectl delete gateway -n NS NAME": {
			rewrite: func(l string) string { return strings.Replace(l, "-n NS NAME", "-n default web", 1) },
			after: func(ctx context.Context) error {
				// The operator removed the finalizer once the fleet's
				// cluster-scoped objects were gone.
				var roles rbacv1.ClusterRoleList
				if err := c.List(ctx, &roles, client.MatchingLabels{"isobar.dev/gateway-namespace": "default"}); err != nil {
					return err
				}
				if len(roles.Items) > 0 {
					return fmt.Errorf("the fleet's ClusterRole %s outlived its Gateway", roles.Items[0].Name)
				}
				return nil
			},
		},
		"kubectl delete gatewayclass isobar": {},
		"kubectl delete -k config/default": {
			after: func(ctx context.Context) error {
				err := c.Get(ctx, types.NamespacedName{Name: "isobar-system"}, &corev1.Namespace{})
				if !apierrors.IsNotFound(err) {
					return fmt.Errorf("namespace isobar-system after the uninstall: %w", err)
				}
				// The operator is gone: a Gateway of the class now keeps
				// its finalizer, as the document says, for the next line.
				gw := &gatewayv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "left", Finalizers: []string{"isobar.dev/fleet"}},
					Spec: gatewayv1.GatewaySpec{GatewayClassName: "isobar", Listeners: []gatewayv1.Listener{{Name: "http", Protocol: gatewayv1.HTTPProtocolType, Port: 80}}}}
				if err := c.Create(ctx, gw); err != nil {
					return err
				}
				return c.Delete(ctx, gw)
			},
		},
		"kubectl patch gateway NAME -n NS --type=json -p '[{\"op\":\"remove\",\"path\":\"/metadata/finalizers\"}]'": {
			rewrite: func(l string) string { return strings.Replace(l, "NAME -n NS", "left -n default", 1) },
			after: func(ctx context.Context) error {
				return poll(ctx, func() (bool, error) {
					err := c.Get(ctx, types.NamespacedName{Namespace: "default", Name: "left"}, &gatewayv1.Gateway{})
					return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
				})
			},
		},
	}
}

// runDocLine runs line with bash in the repository's root, with kubectl on
// the PATH and KUBECONFIG naming the test cluster. With until, it runs the
// line again until its output satisfies until (a `kubectl get` whose
// comment says what to wait for) or ctx ends.
func runDocLine(ctx context.Context, root, assets, kubeconfig, line string, until func(string) bool) (string, error) {
	for {
		cmd := exec.CommandContext(ctx, "bash", "-c", line)
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig, "PATH="+assets+string(os.PathListSeparator)+os.Getenv("PATH"))
		out, err := cmd.CombinedOutput()
		if err == nil && (until == nil || until(string(out))) {
			return string(out), nil
		}
		if until == nil {
			return string(out), err
		}
		select {
		case <-ctx.Done():
			return string(out), fmt.Errorf("the output never showed what the document says: %w (last error: %w)", ctx.Err(), err)
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// docLines are the command lines of the document's shell blocks (fences
// without a language), a line continued with a backslash joined to the
// next; comment lines are left out, and so are other blocks (YAML
// objects, text a command prints).
func docLines(t *testing.T, path string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	inShell, inFence := false, false
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "```") {
			inFence = !inFence
			inShell = inFence && line == "```"
			continue
		}
		if !inShell || line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if n := len(lines); n > 0 && strings.HasSuffix(lines[n-1], "\\") {
			lines[n-1] = strings.TrimSuffix(lines[n-1], "\\") + line
			continue
		}
		lines = append(lines, line)
	}
	if len(lines) == 0 {
		t.Fatalf("%s has no shell block", path)
	}
	return lines
}

// withoutComment is a command line without its trailing comment.
func withoutComment(line string) string {
	if i := strings.Index(line, " #"); i >= 0 {
		line = line[:i]
	}
	return strings.TrimSpace(line)
}

// releaseInstall writes the release's standard-install.yaml (the channel's
// files, as the release concatenates them) and returns its path and the
// names of its CRDs, which the cluster starts without.
func releaseInstall(t *testing.T, dir string) (string, []string) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("the Gateway API's standard channel in %s: %v", dir, err)
	}
	slices.Sort(files)
	var all []byte
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		all = append(append(all, "---\n"...), data...)
	}
	path := filepath.Join(t.TempDir(), "standard-install.yaml")
	if err := os.WriteFile(path, all, 0o644); err != nil {
		t.Fatal(err)
	}
	crds, err := harness.ReadCRDs(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, crd := range crds {
		names = append(names, crd.Name)
	}
	return path, names
}

// playLoadBalancer gives the Gateway's Envoy Service the address a cloud
// load balancer would, once the operator has created it.
func playLoadBalancer(ctx context.Context, c client.Client, gateway types.NamespacedName) error {
	return poll(ctx, func() (bool, error) {
		gw := &gatewayv1.Gateway{}
		if err := c.Get(ctx, gateway, gw); err != nil {
			return false, client.IgnoreNotFound(err)
		}
		svc := &corev1.Service{}
		if err := c.Get(ctx, types.NamespacedName{Namespace: gw.Namespace, Name: render.NamesOf(gw).Envoy}, svc); err != nil {
			return false, client.IgnoreNotFound(err)
		}
		if svc.Spec.Type != corev1.ServiceTypeLoadBalancer {
			return false, fmt.Errorf("the samples' Envoy Service is of type %s, the document says LoadBalancer", svc.Spec.Type)
		}
		svc.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: simulatedLoadBalancerIP}}
		return true, c.Status().Update(ctx, svc)
	})
}

// poll calls cond every 100ms until it holds, fails, or ctx ends.
func poll(ctx context.Context, cond func() (bool, error)) error {
	for {
		ok, err := cond()
		if err != nil || ok {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// contains holds for output that contains s.
func contains(s string) func(string) bool {
	return func(out string) bool { return strings.Contains(out, s) }
}

// column holds for a `kubectl get` table with a row for name whose columns
// have the values given, counted from the name's (1 is the column after
// it, whether or not a NAMESPACE column comes first).
func column(name string, want map[int]string) func(string) bool {
	return func(out string) bool {
		for _, row := range strings.Split(out, "\n") {
			f := strings.Fields(row)
			at := slices.Index(f[:min(2, len(f))], name)
			if at < 0 {
				continue
			}
			ok := true
			for col, v := range want {
				if at+col >= len(f) || f[at+col] != v {
					ok = false
				}
			}
			if ok {
				return true
			}
		}
		return false
	}
}
