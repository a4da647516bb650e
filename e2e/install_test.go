package e2e

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"isobar.dev/e2e/harness"
)

// config/default installs, and its RBAC is enough: the operator, running
// as the ServiceAccount config/default creates, provisions a fleet,
// including the RBAC it grants the per-Gateway controller (which the API
// server allows only when the operator holds those permissions itself).
// The same holds installed into another namespace with a kustomize
// overlay of a user's (namespace and namePrefix), as a second install
// beside the first.
func TestInstallConfigDefault(t *testing.T) {
	root, err := harness.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	t.Run("as shipped", func(t *testing.T) {
		installAndProvision(t, filepath.Join(root, "config", "default"), "isobar-system", "isobar-operator", true)
	})
	t.Run("into another namespace", func(t *testing.T) {
		dir := t.TempDir()
		base, err := filepath.Rel(dir, filepath.Join(root, "config", "default"))
		if err != nil {
			t.Fatal(err)
		}
		ns := "isobar-" + namespace(t)
		overlay := "resources:\n- " + base + "\nnamespace: " + ns + "\nnamePrefix: other-\n"
		if err := os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(overlay), 0o644); err != nil {
			t.Fatal(err)
		}
		installAndProvision(t, dir, ns, "other-isobar-operator", false)
	})
}

// installAndProvision applies the kustomization in dir (its CRDs only when
// crds), then runs the operator as the ServiceAccount namespace/account it
// creates and has it provision a fleet.
func installAndProvision(t *testing.T, dir, namespaceName, account string, crds bool) {
	ctx, cancel := harness.Context()
	defer cancel()
	objs, err := harness.KustomizeObjects(dir)
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]int{}
	for _, o := range objs {
		kinds[o.GetKind()]++
		if o.GetKind() == "CustomResourceDefinition" && !crds {
			continue
		}
		if err := env.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(o), client.FieldOwner("e2e-install"), client.ForceOwnership); err != nil {
			t.Fatalf("applying %s %s: %v", o.GetKind(), o.GetName(), err)
		}
	}
	t.Cleanup(func() {
		for _, o := range objs {
			if o.GetKind() == "CustomResourceDefinition" {
				continue // the other tests use it
			}
			_ = env.Client.Delete(context.Background(), o)
		}
	})
	// Our CRD, and Contour's HTTPProxy, TLSCertificateDelegation and
	// ExtensionService.
	for kind, want := range map[string]int{"CustomResourceDefinition": 4, "Namespace": 1, "ServiceAccount": 1, "ClusterRole": 1, "ClusterRoleBinding": 1, "Deployment": 1, "Service": 1} {
		if kinds[kind] != want {
			t.Errorf("%s has %d %s, want %d", dir, kinds[kind], kind, want)
		}
	}
	for _, crd := range []string{"contourdeployments.isobar.dev", "httpproxies.projectcontour.io", "tlscertificatedelegations.projectcontour.io", "extensionservices.projectcontour.io"} {
		if err := env.Client.Get(ctx, keyOf("", crd), &apiextensionsv1.CustomResourceDefinition{}); err != nil {
			t.Fatal(err)
		}
	}

	// The operator as its ServiceAccount.
	kubeconfig := serviceAccountKubeconfig(t, namespaceName, account)
	ns := namespace(t)
	controller := "isobar.dev/install-" + ns
	operatorWith(t, kubeconfig, controller)
	provisions(t, ctx, controller, "install-"+ns, ns)
	var roles rbacv1.ClusterRoleList
	if err := env.Client.List(ctx, &roles, client.MatchingLabels{"isobar.dev/gateway-namespace": ns}); err != nil || len(roles.Items) != 1 {
		t.Errorf("the controller's ClusterRole: %d found, %v", len(roles.Items), err)
	}
}

// serviceAccountKubeconfig is a kubeconfig of the test cluster that acts
// as ServiceAccount namespace/name, as a Pod running as it would.
func serviceAccountKubeconfig(t *testing.T, namespace, name string) string {
	t.Helper()
	admin, err := env.Kubeconfig("installer-" + namespace)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.LoadFromFile(admin)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range cfg.AuthInfos {
		a.Impersonate = "system:serviceaccount:" + namespace + ":" + name
		a.ImpersonateGroups = []string{"system:serviceaccounts", "system:serviceaccounts:" + namespace, "system:authenticated"}
	}
	path := filepath.Join(t.TempDir(), "service-account.kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// provisions creates GatewayClass class of controller and a Gateway in
// namespace ns, and waits for the operator to accept the class and
// provision the Gateway's fleet.
func provisions(t *testing.T, ctx context.Context, controller, class, ns string) {
	t.Helper()
	gc := &gatewayv1.GatewayClass{ObjectMeta: metav1.ObjectMeta{Name: class}, Spec: gatewayv1.GatewayClassSpec{ControllerName: gatewayv1.GatewayController(controller)}}
	gw := &gatewayv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}, Spec: gatewayv1.GatewaySpec{
		GatewayClassName: gatewayv1.ObjectName(class),
		Listeners:        []gatewayv1.Listener{{Name: "http", Protocol: gatewayv1.HTTPProtocolType, Port: 80}},
	}}
	create(t, ctx, gc, gw)
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), gc) })
	classCondition(t, ctx, class, "Accepted", metav1.ConditionTrue, "Accepted", "")
	waitGatewayCondition(t, ctx, ns, "web", "isobar.dev/Provisioned", metav1.ConditionTrue, "Provisioned", "")
}
