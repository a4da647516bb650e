package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"isobar.dev/e2e/harness"
)

// installStrategy is the part of the bundle's CSV that OLM runs: the
// operator's cluster permissions and its Deployment.
type installStrategy struct {
	Spec struct {
		Install struct {
			Spec struct {
				ClusterPermissions []struct {
					ServiceAccountName string              `json:"serviceAccountName"`
					Rules              []rbacv1.PolicyRule `json:"rules"`
				} `json:"clusterPermissions"`
				Deployments []struct {
					Spec struct {
						Template corev1.PodTemplateSpec `json:"template"`
					} `json:"spec"`
				} `json:"deployments"`
			} `json:"spec"`
		} `json:"install"`
	} `json:"spec"`
}

// The bundle's CSV installs as OLM runs it in AllNamespaces mode, in a
// namespace other than isobar-system: its cluster permissions bound to
// its ServiceAccount there, its Deployment's arguments and environment
// (the Pod's namespace from the downward API). The operator elects its
// leader in that namespace and provisions a fleet.
func TestInstallFromBundleInAnyNamespace(t *testing.T) {
	ctx, cancel := harness.Context()
	defer cancel()
	root, err := harness.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(root, "bundle", "manifests", "isobar.clusterserviceversion.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var csv installStrategy
	if err := yaml.Unmarshal(data, &csv); err != nil {
		t.Fatal(err)
	}
	install := csv.Spec.Install.Spec
	if len(install.ClusterPermissions) != 1 || len(install.Deployments) != 1 {
		t.Fatalf("the CSV has %d cluster permissions and %d deployments, want one each", len(install.ClusterPermissions), len(install.Deployments))
	}
	perms, pod := install.ClusterPermissions[0], install.Deployments[0].Spec.Template.Spec
	ns := namespace(t) // OLM's install namespace
	account := perms.ServiceAccountName
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "olm-" + ns}, Rules: perms.Rules}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "olm-" + ns},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: account, Namespace: ns}}}
	create(t, ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: account}}, role, binding)
	t.Cleanup(func() {
		_ = env.Client.Delete(context.Background(), binding)
		_ = env.Client.Delete(context.Background(), role)
	})

	// The operator as its ServiceAccount in ns, with the CSV's arguments
	// and the environment the Pod would get.
	kubeconfig := serviceAccountKubeconfig(t, ns, account)
	c := pod.Containers[0]
	controller := "isobar.dev/olm-" + ns
	health := harness.FreePortString(t)
	var args []string
	for _, a := range c.Args {
		switch {
		case strings.HasPrefix(a, "--health-probe-bind-address="):
			a = "--health-probe-bind-address=127.0.0.1:" + health
		case strings.HasPrefix(a, "--metrics-bind-address="):
			a = "--metrics-bind-address=0"
		}
		args = append(args, a)
	}
	args = append(args, "--controller-name="+controller, "--log-format=console")
	environ := []string{"KUBECONFIG=" + kubeconfig}
	for _, e := range c.Env {
		switch {
		case e.ValueFrom != nil && e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.namespace":
			environ = append(environ, e.Name+"="+ns)
		case e.ValueFrom == nil:
			environ = append(environ, e.Name+"="+e.Value)
		default:
			t.Fatalf("the CSV's operator takes %s from %+v, which this test does not give", e.Name, e.ValueFrom)
		}
	}
	bin, err := env.Binaries()
	if err != nil {
		t.Fatal(err)
	}
	op, err := harness.StartProcessEnv(env.Dir, environ, bin+"/isobar-operator", args...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if code, err := op.Stop(20 * time.Second); err != nil || code != 0 {
			t.Errorf("isobar-operator stopped with code %d, %v\n%s", code, err, op.Output())
		}
	})
	waitReady(t, op, "http://127.0.0.1:"+health+"/readyz", 60*time.Second)

	eventually(t, 30*time.Second, "the operator's leader election Lease in "+ns, func() bool {
		var leases coordinationv1.LeaseList
		if err := env.Client.List(ctx, &leases, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		return len(leases.Items) > 0
	})
	provisions(t, ctx, controller, "olm-"+ns, namespace(t))
	if out := op.Output(); strings.Contains(out, "isobar-system") {
		t.Errorf("the operator installed in %s mentions isobar-system:\n%s", ns, out)
	}
}
