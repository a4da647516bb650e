package e2e

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	gatewayv1beta1 "sigs.k8s.io/gateway-api/apis/v1beta1"

	"isobar.dev/e2e/harness"
	"isobar.dev/operator/pkg/render"
)

// A Gateway's controller may read exactly the Secrets its Gateway can use:
// its own namespace's certificate, another namespace's while a
// ReferenceGrant allows it, and nothing else, not even a list of names.
// The operator keeps the grants as the Gateway and the grants change, and
// removes them with the Gateway. Checked with the API server's authorizer
// (SubjectAccessReview) and with reads made as the controller's
// ServiceAccount.
func TestOperatorCertificateGrants(t *testing.T) {
	ns, certs := namespace(t), namespace(t)
	ctx, cancel := harness.Context()
	defer cancel()
	controller := "isobar.dev/grants-" + ns
	operator(t, controller)
	class := &gatewayv1.GatewayClass{ObjectMeta: metav1.ObjectMeta{Name: "grants-" + ns}, Spec: gatewayv1.GatewayClassSpec{ControllerName: gatewayv1.GatewayController(controller)}}
	secret := func(namespace, name string) *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}, Data: map[string][]byte{"k": []byte("v")}}
	}
	https := func(name, namespace, secret string) gatewayv1.Listener {
		ref := gatewayv1.SecretObjectReference{Name: gatewayv1.ObjectName(secret)}
		if namespace != "" {
			ref.Namespace = ptr.To(gatewayv1.Namespace(namespace))
		}
		return gatewayv1.Listener{Name: gatewayv1.SectionName(name), Protocol: gatewayv1.HTTPSProtocolType, Port: 443,
			Hostname: ptr.To(gatewayv1.Hostname(name + ".example.com")), TLS: &gatewayv1.ListenerTLSConfig{CertificateRefs: []gatewayv1.SecretObjectReference{ref}}}
	}
	gw := &gatewayv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "edge"}, Spec: gatewayv1.GatewaySpec{
		GatewayClassName: gatewayv1.ObjectName(class.Name),
		Listeners: []gatewayv1.Listener{
			https("own", "", "own-tls"),
			https("shared", certs, "shared-tls"),
			https("private", certs, "private-tls"),
		},
	}}
	grant := &gatewayv1beta1.ReferenceGrant{ObjectMeta: metav1.ObjectMeta{Namespace: certs, Name: "edge"}, Spec: gatewayv1beta1.ReferenceGrantSpec{
		From: []gatewayv1beta1.ReferenceGrantFrom{{Group: gatewayv1.GroupName, Kind: "Gateway", Namespace: gatewayv1.Namespace(ns)}},
		To:   []gatewayv1beta1.ReferenceGrantTo{{Kind: "Secret", Name: ptr.To(gatewayv1.ObjectName("shared-tls"))}},
	}}
	create(t, ctx, secret(ns, "own-tls"), secret(ns, "unrelated"), secret(certs, "shared-tls"), secret(certs, "private-tls"), grant, class, gw)
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), class) })
	n := render.NamesOf(gw)
	account := "system:serviceaccount:" + ns + ":" + n.ControllerAccount
	groups := []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"}

	type access struct {
		verb, namespace, name string
		allowed               bool
	}
	expect := func(what string, want []access) {
		t.Helper()
		eventually(t, 30*time.Second, what, func() bool {
			for _, a := range want {
				if allowed(t, ctx, account, groups, a.verb, "secrets", a.namespace, a.name) != a.allowed {
					return false
				}
			}
			return true
		})
	}
	expect("the controller may read the certificates its Gateway can use, and only those", []access{
		{"get", ns, "own-tls", true},
		{"watch", ns, "own-tls", true},
		{"get", certs, "shared-tls", true},
		{"get", certs, "private-tls", false}, // no ReferenceGrant
		{"get", ns, "unrelated", false},
		{"list", ns, "", false},
		{"list", certs, "", false},
		{"get", "default", "anything", false},
	})

	// An attempted read with the controller's credentials.
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: account, Groups: groups}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Secrets(ns).Get(ctx, "own-tls", metav1.GetOptions{}); err != nil {
		t.Errorf("reading the Gateway's certificate as the controller: %v", err)
	}
	byName := metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", "shared-tls").String()}
	if l, err := cs.CoreV1().Secrets(certs).List(ctx, byName); err != nil || len(l.Items) != 1 {
		t.Errorf("listing the granted Secret by name, as the controller's watch does: %v", err)
	}
	for _, read := range []struct {
		what string
		err  error
	}{
		{"an unrelated Secret in the Gateway's namespace", getErr(cs.CoreV1().Secrets(ns).Get(ctx, "unrelated", metav1.GetOptions{}))},
		{"a Secret no ReferenceGrant allows", getErr(cs.CoreV1().Secrets(certs).Get(ctx, "private-tls", metav1.GetOptions{}))},
		{"every Secret of the namespace", getErr(cs.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{}))},
		{"every Secret of the cluster", getErr(cs.CoreV1().Secrets("").List(ctx, metav1.ListOptions{}))},
	} {
		if !apierrors.IsForbidden(read.err) {
			t.Errorf("reading %s as the controller: got %v, want Forbidden", read.what, read.err)
		}
	}

	// The grant follows the ReferenceGrant.
	if err := env.Client.Delete(ctx, grant); err != nil {
		t.Fatal(err)
	}
	expect("the other namespace's certificate no longer readable once its ReferenceGrant is gone", []access{
		{"get", certs, "shared-tls", false},
		{"get", ns, "own-tls", true},
	})
	if err := env.Client.Get(ctx, keyOf(certs, n.ClusterRole), &rbacv1.Role{}); !apierrors.IsNotFound(err) {
		t.Errorf("the Role in %s after the ReferenceGrant went: %v, want not found", certs, err)
	}

	// And the Gateway.
	if err := env.Client.Delete(ctx, gw); err != nil {
		t.Fatal(err)
	}
	expect("nothing readable once the Gateway is gone", []access{{"get", ns, "own-tls", false}})
}

func getErr[T any](_ T, err error) error { return err }
