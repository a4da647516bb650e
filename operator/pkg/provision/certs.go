package provision

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"isobar.dev/operator/pkg/certs"
	"isobar.dev/operator/pkg/render"
)

// certSecrets returns the fleet's certificate Secrets that need writing
// (none when all are current) and when the next renewal is due. A missing,
// unreadable or expiring CA is replaced along with both leaves; a leaf is
// replaced when it expires soon or does not match its CA or names.
func certSecrets(ctx context.Context, c client.Reader, ns string, n render.Names, labels map[string]string, now time.Time) ([]*corev1.Secret, time.Time, error) {
	get := func(name string) (*corev1.Secret, error) {
		s := &corev1.Secret{}
		err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, s)
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return s, err
	}
	var out []*corev1.Secret
	ca, err := get(n.CA)
	if err != nil {
		return nil, time.Time{}, err
	}
	var caCert, caKey []byte
	if ca != nil {
		caCert, caKey = ca.Data[certs.CACert], ca.Data[certs.CAKey]
	}
	if ca == nil || !certs.RenewAt(caCert).After(now) || len(caKey) == 0 {
		if caCert, caKey, err = certs.NewCA(n.Base+"."+ns+" xDS CA", now); err != nil {
			return nil, time.Time{}, err
		}
		out = append(out, secret(ns, n.CA, labels, corev1.SecretTypeOpaque, map[string][]byte{certs.CACert: caCert, certs.CAKey: caKey}))
	}
	next := certs.RenewAt(caCert)
	for _, leaf := range []struct {
		name   string
		names  []string
		server bool
	}{
		{n.ControllerCerts, []string{n.ControllerServiceDNS, n.ControllerServiceDNS + ".cluster.local"}, true},
		{n.EnvoyCerts, []string{n.Envoy + "." + ns + ".envoy.isobar.dev"}, false},
	} {
		s, err := get(leaf.name)
		if err != nil {
			return nil, time.Time{}, err
		}
		var cert []byte
		if s != nil {
			cert = s.Data[certs.TLSCert]
		}
		if s == nil || !certs.SignedBy(cert, caCert, leaf.names, now) || !certs.RenewAt(cert).After(now) || string(s.Data[certs.CACert]) != string(caCert) {
			var key []byte
			if cert, key, err = certs.Issue(caCert, caKey, leaf.names, leaf.server, now); err != nil {
				return nil, time.Time{}, err
			}
			out = append(out, secret(ns, leaf.name, labels, corev1.SecretTypeTLS, map[string][]byte{certs.TLSCert: cert, certs.TLSKey: key, certs.CACert: caCert}))
		}
		if at := certs.RenewAt(cert); at.Before(next) {
			next = at
		}
	}
	return out, next, nil
}

func secret(ns, name string, labels map[string]string, typ corev1.SecretType, data map[string][]byte) *corev1.Secret {
	return &corev1.Secret{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
		Type:       typ,
		Data:       data,
	}
}
