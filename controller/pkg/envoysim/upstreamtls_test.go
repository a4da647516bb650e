package envoysim

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"testing"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	"google.golang.org/protobuf/types/known/anypb"
)

func selfSigned(t *testing.T, dns ...string) (*x509.Certificate, []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: dns[0]}, DNSNames: dns,
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	c, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return c, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

func TestVerifyUpstream(t *testing.T) {
	backend, backendPEM := selfSigned(t, "*.example.com")
	_, otherPEM := selfSigned(t, "other.example.com")
	cluster := func(ca []byte, san string, typ tlsv3.SubjectAltNameMatcher_SanType) *clusterv3.Cluster {
		vc := &tlsv3.CertificateValidationContext{TrustedCa: &corev3.DataSource{Specifier: &corev3.DataSource_InlineBytes{InlineBytes: ca}}}
		if san != "" {
			vc.MatchTypedSubjectAltNames = []*tlsv3.SubjectAltNameMatcher{{SanType: typ,
				Matcher: &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_Exact{Exact: san}}}}
		}
		ctx, err := anypb.New(&tlsv3.UpstreamTlsContext{Sni: "abc.example.com", CommonTlsContext: &tlsv3.CommonTlsContext{
			ValidationContextType: &tlsv3.CommonTlsContext_ValidationContext{ValidationContext: vc}}})
		if err != nil {
			t.Fatal(err)
		}
		return &clusterv3.Cluster{Name: "c", TransportSocket: &corev3.TransportSocket{Name: "envoy.transport_sockets.tls",
			ConfigType: &corev3.TransportSocket_TypedConfig{TypedConfig: ctx}}}
	}
	for _, tc := range []struct {
		name    string
		cluster *clusterv3.Cluster
		ok      bool
	}{
		{"trusted, a DNS matcher the wildcard name covers", cluster(backendPEM, "abc.example.com", tlsv3.SubjectAltNameMatcher_DNS), true},
		{"trusted, no SAN matcher", cluster(backendPEM, "", 0), true},
		{"trusted, a DNS matcher no name covers", cluster(backendPEM, "abc.example.org", tlsv3.SubjectAltNameMatcher_DNS), false},
		{"trusted, a wildcard label covers one label only", cluster(backendPEM, "a.b.example.com", tlsv3.SubjectAltNameMatcher_DNS), false},
		{"trusted, a URI matcher and no URI name", cluster(backendPEM, "spiffe://example.com/a", tlsv3.SubjectAltNameMatcher_URI), false},
		{"signed by another CA", cluster(otherPEM, "", 0), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &Simulator{clusters: map[string]*clusterv3.Cluster{"c": tc.cluster}, secrets: map[string]*tlsv3.Secret{}}
			err := s.VerifyUpstream("c", []*x509.Certificate{backend})
			if (err == nil) != tc.ok {
				t.Errorf("VerifyUpstream: %v, want ok %t", err, tc.ok)
			}
		})
	}
}
