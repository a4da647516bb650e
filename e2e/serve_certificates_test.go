package e2e

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"slices"
	"testing"
	"time"

	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"isobar.dev/api/certrefs"
	"isobar.dev/e2e/harness"
	"isobar.dev/operator/pkg/certs"
	"isobar.dev/operator/pkg/render"
)

// The controller, holding only the RBAC the operator renders for its
// Gateway (its certificate by name, no other Secret), serves the
// certificate once it exists, follows its rotation, and notices its
// deletion: each Secret is watched by name.
func TestServeCertificatesByName(t *testing.T) {
	ctx, cancel := harness.Context()
	defer cancel()
	ns := namespace(t)
	class := &gatewayv1.GatewayClass{ObjectMeta: metav1.ObjectMeta{Name: "certs-" + ns}, Spec: gatewayv1.GatewayClassSpec{ControllerName: controllerName}}
	gw := &gatewayv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}, Spec: gatewayv1.GatewaySpec{
		GatewayClassName: gatewayv1.ObjectName(class.Name),
		Listeners: []gatewayv1.Listener{{Name: "https", Protocol: gatewayv1.HTTPSProtocolType, Port: 443, Hostname: ptr.To(gatewayv1.Hostname("www.example.com")),
			TLS: &gatewayv1.ListenerTLSConfig{CertificateRefs: []gatewayv1.SecretObjectReference{{Name: "web-tls"}}}}},
	}}
	create(t, ctx, class, gw,
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web-envoy"}, Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "https", Port: 443}}}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "unrelated"}})
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), class) })

	kubeconfig := asRenderedController(t, ctx, gw, certrefs.Of(certrefs.Input{Gateway: gw}))
	s := serveWith(t, kubeconfig, ns, "web", nil)
	ads := newADSClient(t, dialXDS(t, s.pki, s.xds), "envoy-0", ns+"/web", resourcev3.SecretType)
	// served reads SDS until the certificate served is want.
	served := func(what string, want []byte) {
		t.Helper()
		var got []byte
		for deadline := time.Now().Add(30 * time.Second); ; {
			r := ads.next(resourcev3.SecretType, 10*time.Second)
			ads.ack(r)
			got = nil
			for _, sec := range resources[tlsv3.Secret](t, r) {
				if c := sec.GetTlsCertificate(); c != nil {
					got = c.GetCertificateChain().GetInlineBytes()
				}
			}
			if bytes.Equal(got, want) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: SDS serves %q", what, got)
			}
		}
	}
	// No certificate yet: the listener is not valid.
	waitGatewayCondition(t, ctx, ns, "web", "Accepted", metav1.ConditionFalse, "ListenersNotValid", "")

	issue := func() (crt, key []byte) {
		t.Helper()
		ca, caKey, err := certs.NewCA("web", time.Now())
		if err != nil {
			t.Fatal(err)
		}
		crt, key, err = certs.Issue(ca, caKey, []string{"www.example.com"}, true, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		return crt, key
	}
	crt, key := issue()
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web-tls"}, Type: corev1.SecretTypeTLS,
		Data: map[string][]byte{corev1.TLSCertKey: crt, corev1.TLSPrivateKeyKey: key}}
	create(t, ctx, secret)
	served("the certificate created after the Gateway", crt)
	waitGatewayCondition(t, ctx, ns, "web", "Accepted", metav1.ConditionTrue, "Accepted", "")

	rotated, rotatedKey := issue()
	secret.Data = map[string][]byte{corev1.TLSCertKey: rotated, corev1.TLSPrivateKeyKey: rotatedKey}
	if err := env.Client.Update(ctx, secret); err != nil {
		t.Fatal(err)
	}
	served("the rotated certificate", rotated)

	if err := env.Client.Delete(ctx, secret); err != nil {
		t.Fatal(err)
	}
	// The listener is not valid again.
	waitGatewayCondition(t, ctx, ns, "web", "Accepted", metav1.ConditionFalse, "ListenersNotValid", "")
}

// asRenderedController creates the RBAC the operator renders for gw's
// controller, granting it refs, and returns a kubeconfig acting as the
// controller's ServiceAccount.
func asRenderedController(t *testing.T, ctx context.Context, gw *gatewayv1.Gateway, refs []certrefs.Ref) string {
	t.Helper()
	f, err := render.Render(render.Input{Gateway: gw, ControllerName: string(controllerName), CertificateRefs: refs})
	if err != nil {
		t.Fatal(err)
	}
	var rbac []client.Object
	for _, o := range slices.Concat(f.Namespaced, f.ClusterScoped, f.Grants) {
		switch o.GetObjectKind().GroupVersionKind().Kind {
		case "ServiceAccount", "Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding":
			rbac = append(rbac, o)
		}
	}
	create(t, ctx, rbac...)
	t.Cleanup(func() {
		for _, o := range f.ClusterScoped {
			_ = env.Client.Delete(context.Background(), o)
		}
	})
	admin, err := env.Kubeconfig("isobar-controller")
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig, err := harness.Impersonating(admin, t.TempDir(), gw.Namespace, f.Names.ControllerAccount)
	if err != nil {
		t.Fatal(err)
	}
	return kubeconfig
}

// readyWithin reports whether a readiness endpoint answers 200 within d.
func readyWithin(url string, d time.Duration) bool {
	for deadline := time.Now().Add(d); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if resp, err := http.Get(url); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return true
			}
		}
	}
	return false
}

// The xDS port stays closed until the first configuration is translated:
// an empty cache would answer a reconnecting Envoy with no resources, and
// it would drop its listeners. The first pass is held here by a
// certificate the controller may not read (it waits for it, bounded).
func TestServeXDSClosedUntilTranslated(t *testing.T) {
	ctx, cancel := harness.Context()
	defer cancel()
	ns := namespace(t)
	class := &gatewayv1.GatewayClass{ObjectMeta: metav1.ObjectMeta{Name: "closed-" + ns}, Spec: gatewayv1.GatewayClassSpec{ControllerName: controllerName}}
	gw := &gatewayv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}, Spec: gatewayv1.GatewaySpec{
		GatewayClassName: gatewayv1.ObjectName(class.Name),
		Listeners: []gatewayv1.Listener{{Name: "https", Protocol: gatewayv1.HTTPSProtocolType, Port: 443,
			TLS: &gatewayv1.ListenerTLSConfig{CertificateRefs: []gatewayv1.SecretObjectReference{{Name: "web-tls"}}}}},
	}}
	create(t, ctx, class, gw, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web-tls"}})
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), class) })
	s := startController(t, asRenderedController(t, ctx, gw, nil), ns, "web", nil)
	waitReady(t, s.proc, s.health+"/healthz", 60*time.Second)
	checked := 0
	for {
		resp, err := http.Get(s.health + "/readyz")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			break
		}
		if conn, err := net.DialTimeout("tcp", s.xds, time.Second); err == nil {
			conn.Close()
			// The port may have opened, after the translation, since
			// readyz was asked: then the controller is ready at once.
			if !readyWithin(s.health+"/readyz", time.Second) {
				t.Fatal("the xDS port accepts connections before the first translation")
			}
			break
		}
		checked++
		time.Sleep(200 * time.Millisecond)
	}
	if checked == 0 {
		t.Fatal("the controller was ready before the xDS port could be checked")
	}
	// Then it serves.
	eventually(t, 10*time.Second, "the xDS port open once translated", func() bool {
		conn, err := net.DialTimeout("tcp", s.xds, time.Second)
		if err == nil {
			conn.Close()
		}
		return err == nil
	})
	t.Logf("xDS port closed through %d checks before the first translation", checked)
}
