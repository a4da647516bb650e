package provision

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"isobar.dev/api/fleet"
	"isobar.dev/operator/pkg/certs"
	"isobar.dev/operator/pkg/render"
)

// RotatedAt is the annotation on the CA Secret that says when its CA
// replaced the previous one.
const RotatedAt = "isobar.dev/ca-rotated-at"

// Propagation is how long a CA rotation waits before it signs leaves with
// the new CA: time for every pod's mounted Secrets to hold the bundle that
// trusts both CAs (the kubelet refreshes mounted Secrets within about a
// minute), so that no side ever sees a certificate it does not trust yet.
const Propagation = time.Hour

// certSecrets reads the fleet's certificate Secrets and returns those that
// need writing (none when all are current) and when to look again.
func certSecrets(ctx context.Context, c client.Reader, ns string, n render.Names, labels map[string]string, now time.Time) ([]*corev1.Secret, time.Time, error) {
	current := map[string]*corev1.Secret{}
	for _, name := range []string{n.CA, n.ControllerCerts, n.EnvoyCerts} {
		s := &corev1.Secret{}
		err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, s)
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			return nil, time.Time{}, err
		default:
			current[name] = s
		}
	}
	return planCerts(current, ns, n, labels, now)
}

// planCerts decides the fleet's certificates from the current Secrets (by
// name; missing ones absent). A missing, unreadable or expiring CA is
// replaced in two steps, so that mTLS between the controller and Envoy
// never breaks: first the new CA joins every leaf's trust bundle while the
// leaves stay signed by the old one, then, Propagation later, the leaves
// are reissued by the new CA. The old CA stays in the bundles until it
// expires. A leaf is reissued when it expires soon or does not match its
// signer or names; a leaf whose bundle changed is rewritten with its own
// certificate and key.
func planCerts(current map[string]*corev1.Secret, ns string, n render.Names, labels map[string]string, now time.Time) ([]*corev1.Secret, time.Time, error) {
	var out []*corev1.Secret
	ca := current[n.CA]
	var caCert, caKey, prevCert, prevKey []byte
	var rotatedAt time.Time
	if ca != nil {
		caCert, caKey = ca.Data[fleet.CAKey], ca.Data[certs.CAPrivateKey]
		prevCert, prevKey = ca.Data[certs.PreviousCACert], ca.Data[certs.PreviousCAKey]
		rotatedAt, _ = time.Parse(time.RFC3339, ca.Annotations[RotatedAt])
	}
	caChanged := false
	if ca == nil || len(caKey) == 0 || !certs.RenewAt(caCert).After(now) {
		prevCert, prevKey = nil, nil
		if len(caKey) > 0 && certs.NotAfter(caCert).After(now) {
			prevCert, prevKey = caCert, caKey
		}
		var err error
		if caCert, caKey, err = certs.NewCA(n.Base+"."+ns+" xDS CA", now); err != nil {
			return nil, time.Time{}, err
		}
		rotatedAt, caChanged = now, true
	}
	if len(prevCert) > 0 && !certs.NotAfter(prevCert).After(now) {
		prevCert, prevKey, caChanged = nil, nil, true
	}
	if caChanged {
		data := map[string][]byte{fleet.CAKey: caCert, certs.CAPrivateKey: caKey}
		if len(prevCert) > 0 {
			data[certs.PreviousCACert], data[certs.PreviousCAKey] = prevCert, prevKey
		}
		s := secret(ns, n.CA, labels, corev1.SecretTypeOpaque, data)
		s.Annotations = map[string]string{RotatedAt: rotatedAt.UTC().Format(time.RFC3339)}
		out = append(out, s)
	}
	bundle := append(append([]byte(nil), caCert...), prevCert...)
	// While the new CA propagates, leaves are signed by the old one, which
	// every pod trusts whichever Secrets it has mounted.
	signerCert, signerKey := caCert, caKey
	next := certs.RenewAt(caCert)
	if len(prevCert) > 0 {
		if switchAt := rotatedAt.Add(Propagation); now.Before(switchAt) {
			signerCert, signerKey = prevCert, prevKey
			next = earliest(next, switchAt)
		}
		next = earliest(next, certs.NotAfter(prevCert))
	}
	for _, leaf := range []struct {
		name   string
		names  []string
		server bool
	}{
		{n.ControllerCerts, []string{n.ControllerServiceDNS, n.ControllerServiceDNS + ".cluster.local"}, true},
		{n.EnvoyCerts, []string{n.Envoy + "." + ns + ".envoy.isobar.dev"}, false},
	} {
		s := current[leaf.name]
		var cert, key []byte
		if s != nil {
			cert, key = s.Data[fleet.CertKey], s.Data[fleet.KeyKey]
		}
		reissue := s == nil || len(key) == 0 || !certs.SignedBy(cert, signerCert, leaf.names, now) || !certs.RenewAt(cert).After(now)
		if reissue {
			var err error
			if cert, key, err = certs.Issue(signerCert, signerKey, leaf.names, leaf.server, now); err != nil {
				return nil, time.Time{}, err
			}
		}
		if reissue || string(s.Data[fleet.CAKey]) != string(bundle) {
			out = append(out, secret(ns, leaf.name, labels, corev1.SecretTypeTLS, map[string][]byte{fleet.CertKey: cert, fleet.KeyKey: key, fleet.CAKey: bundle}))
		}
		next = earliest(next, certs.RenewAt(cert))
	}
	return out, next, nil
}

func earliest(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func secret(ns, name string, labels map[string]string, typ corev1.SecretType, data map[string][]byte) *corev1.Secret {
	return &corev1.Secret{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
		Type:       typ,
		Data:       data,
	}
}
