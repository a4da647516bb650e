package provision

import (
	"crypto/tls"
	"crypto/x509"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"isobar.dev/api/fleet"
	"isobar.dev/operator/pkg/render"
)

// Twelve years of a fleet's certificates, reconciled whenever the plan
// asks to be: every CA and leaf renewal must keep the controller and Envoy
// able to authenticate each other whichever of two successive versions of
// the Secrets each has mounted (the kubelet updates mounted Secrets in each
// pod on its own schedule, within Propagation).
func TestCertificateRotationNeverBreaksMTLS(t *testing.T) {
	n := render.NamesOf(&gatewayv1.Gateway{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"},
		Spec:       gatewayv1.GatewaySpec{GatewayClassName: "isobar"},
	})
	now := time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)
	end := now.Add(12 * 365 * 24 * time.Hour)
	current := map[string]*corev1.Secret{}
	cas, leafIssues := 0, 0
	for steps := 0; now.Before(end); steps++ {
		if steps > 1000 {
			t.Fatal("the plan never settles")
		}
		before := copySecrets(current)
		writes, next, err := planCerts(current, "default", n, nil, now)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range writes {
			if s.Name == n.CA {
				if before[n.CA] == nil || string(s.Data[fleet.CAKey]) != string(before[n.CA].Data[fleet.CAKey]) {
					cas++
				}
			} else if before[s.Name] == nil || string(s.Data[fleet.CertKey]) != string(before[s.Name].Data[fleet.CertKey]) {
				leafIssues++
			}
			current[s.Name] = s
		}
		if again, _, _ := planCerts(current, "default", n, nil, now); len(again) != 0 {
			t.Fatalf("%s: the plan is not settled after writing it: %d more writes", now.Format(time.DateOnly), len(again))
		}
		if len(before) == 3 {
			for _, mounted := range []struct{ controller, envoy map[string]*corev1.Secret }{
				{before, before}, {before, current}, {current, before}, {current, current},
			} {
				if err := handshake(mounted.controller[n.ControllerCerts], mounted.envoy[n.EnvoyCerts], n, now); err != nil {
					t.Fatalf("%s, step %d: %v", now.Format(time.RFC3339), steps, err)
				}
			}
		}
		if !next.After(now) {
			t.Fatalf("%s: next check at %s is not later", now, next)
		}
		now = next
	}
	// 12 years with 5-year CAs renewed at two thirds (every 3.3 years):
	// the first and three renewals; leaves every 60 days and after each CA
	// switch.
	if cas != 4 {
		t.Errorf("%d CAs issued in 12 years, want 4", cas)
	}
	if leafIssues < 2*70 {
		t.Errorf("only %d leaf certificates issued in 12 years", leafIssues)
	}
}

func copySecrets(m map[string]*corev1.Secret) map[string]*corev1.Secret {
	out := make(map[string]*corev1.Secret, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// handshake checks both directions of the fleet's mTLS: Envoy verifies
// the controller's server certificate with its bundle, the controller
// Envoy's client certificate with its own.
func handshake(controller, envoy *corev1.Secret, n render.Names, now time.Time) error {
	verify := func(leaf, bundle *corev1.Secret, name string, usage x509.ExtKeyUsage) error {
		pair, err := tls.X509KeyPair(leaf.Data[fleet.CertKey], leaf.Data[fleet.KeyKey])
		if err != nil {
			return err
		}
		c, err := x509.ParseCertificate(pair.Certificate[0])
		if err != nil {
			return err
		}
		roots := x509.NewCertPool()
		roots.AppendCertsFromPEM(bundle.Data[fleet.CAKey])
		_, err = c.Verify(x509.VerifyOptions{Roots: roots, CurrentTime: now, DNSName: name, KeyUsages: []x509.ExtKeyUsage{usage}})
		return err
	}
	if err := verify(controller, envoy, n.ControllerServiceDNS, x509.ExtKeyUsageServerAuth); err != nil {
		return err
	}
	return verify(envoy, controller, "", x509.ExtKeyUsageClientAuth)
}
