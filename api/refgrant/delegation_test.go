package refgrant

import (
	"testing"

	contourv1 "github.com/projectcontour/contour/apis/projectcontour/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestDelegated(t *testing.T) {
	ds := []*contourv1.TLSCertificateDelegation{
		{ObjectMeta: metav1.ObjectMeta{Namespace: "certs", Name: "d"}, Spec: contourv1.TLSCertificateDelegationSpec{
			Delegations: []contourv1.CertificateDelegation{
				{SecretName: "shop", TargetNamespaces: []string{"shop"}},
				{SecretName: "wild", TargetNamespaces: []string{"*"}},
			},
		}},
	}
	for _, tc := range []struct {
		secretNS, name, ns string
		want               bool
	}{
		{"shop", "anything", "shop", true},  // its own namespace
		{"certs", "shop", "shop", true},     // delegated to shop
		{"certs", "shop", "blog", false},    // not to blog
		{"certs", "wild", "blog", true},     // to every namespace
		{"other", "shop", "shop", false},    // a delegation of another namespace
		{"certs", "missing", "shop", false}, // another Secret
	} {
		if got := Delegated(ds, tc.secretNS, tc.name, tc.ns); got != tc.want {
			t.Errorf("Delegated(%s/%s to %s) = %t, want %t", tc.secretNS, tc.name, tc.ns, got, tc.want)
		}
	}
}
