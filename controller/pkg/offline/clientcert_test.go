package offline

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"strings"
	"testing"
	"time"

	"isobar.dev/api/ports"
	"isobar.dev/controller/pkg/envoysim"
)

// TestClientCertificateValidation plays TLS handshakes against the
// client-validation golden's Envoy: a port that requires a certificate
// refuses a client without one or with one its CA did not sign, and lets
// in one it did; AllowInsecureFallback lets in all three; plain HTTP never
// asks.
func TestClientCertificateValidation(t *testing.T) {
	res, _, err := LoadFiles([]string{"testdata/client-validation.in.yaml"}, "")
	if err != nil {
		t.Fatal(err)
	}
	sim := simulator(t, res)
	// The golden's CA is the bench-tls certificate (a CA), and its key.
	var ca tls.Certificate
	for _, s := range res.Secrets {
		if s.Name == "bench-tls" {
			if ca, err = tls.X509KeyPair(s.Data["tls.crt"], s.Data["tls.key"]); err != nil {
				t.Fatal(err)
			}
		}
	}
	caCert, err := x509.ParseCertificate(ca.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	signed := clientCert(t, caCert, ca.PrivateKey)
	self := clientCert(t, nil, nil)
	for _, tc := range []struct {
		name string
		port uint32
		cert [][]byte
		fail string // in the error; "" for success
		asks string // Answer.ClientCertificate
	}{
		{"required, signed", uint32(ports.ContainerPort(443)), signed, "", "required"},
		{"required, none", uint32(ports.ContainerPort(443)), nil, "requires a client certificate", ""},
		{"required, untrusted", uint32(ports.ContainerPort(443)), self, "does not trust the client's certificate", ""},
		{"fallback, signed", 8443, signed, "", "optional"},
		{"fallback, none", 8443, nil, "", "optional"},
		{"fallback, untrusted", 8443, self, "", "optional"},
		{"one of two CAs resolves", 4443, signed, "", "required"},
		{"one of two CAs resolves, none", 4443, nil, "requires a client certificate", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			asked := false
			req := envoysim.Request{Port: tc.port, TLS: true, SNI: "app.example.com", Method: "GET", Authority: "app.example.com", Path: "/",
				ClientCertificate: func() [][]byte { asked = true; return tc.cert }}
			a, err := sim.Simulate(req)
			if tc.fail != "" {
				if err == nil || !strings.Contains(err.Error(), tc.fail) {
					t.Fatalf("err = %v, want one saying %q", err, tc.fail)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !asked || a.ClientCertificate != tc.asks || a.Upstream == nil {
				t.Errorf("asked %v, client certificate %q, upstream %v", asked, a.ClientCertificate, a.Upstream)
			}
		})
	}
	asked := false
	a, err := sim.Simulate(envoysim.Request{Port: uint32(ports.ContainerPort(80)), Method: "GET", Authority: "app.example.com", Path: "/", ClientCertificate: func() [][]byte { asked = true; return nil }})
	if err != nil || asked || a.ClientCertificate != "" {
		t.Errorf("plain HTTP: %v, asked %v, %q", err, asked, a.ClientCertificate)
	}
}

// clientCert issues a client certificate signed by ca (self-signed when
// nil), returned as a DER chain.
func clientCert(t *testing.T, ca *x509.Certificate, caKey any) [][]byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: "client"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	parent, signer := tmpl, any(key)
	if ca != nil {
		parent, signer = ca, caKey
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, signer)
	if err != nil {
		t.Fatal(err)
	}
	return [][]byte{der}
}

// TestHTTPProxyClientValidation plays TLS handshakes against the TLS
// virtual hosts of the httpproxy-tls golden: clientValidation requires a
// certificate its CA Secret signed, optionalClientCertificate lets in a
// client without one but not one that does not verify, and each virtual
// host's chain keeps its own TLS versions.
func TestHTTPProxyClientValidation(t *testing.T) {
	res, _, err := LoadFiles([]string{"testdata/httpproxy-tls.in.yaml"}, "")
	if err != nil {
		t.Fatal(err)
	}
	sim := simulator(t, res)
	// clients-ca holds the certificate of certs/shop-tls, a CA.
	var ca tls.Certificate
	for _, s := range res.Secrets {
		if s.Namespace == "certs" && s.Name == "shop-tls" {
			if ca, err = tls.X509KeyPair(s.Data["tls.crt"], s.Data["tls.key"]); err != nil {
				t.Fatal(err)
			}
		}
	}
	caCert, err := x509.ParseCertificate(ca.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	signed, self := clientCert(t, caCert, ca.PrivateKey), clientCert(t, nil, nil)
	port := uint32(ports.ContainerPort(443))
	for _, tc := range []struct {
		name string
		host string
		cert [][]byte
		fail string // in the error; "" for success
		asks string // Answer.ClientCertificate
	}{
		{"required, signed", "mtls.example.com", signed, "", "required"},
		{"required, none", "mtls.example.com", nil, "requires a client certificate", ""},
		{"required, untrusted", "mtls.example.com", self, "does not trust the client's certificate", ""},
		{"optional, signed", "optional.example.com", signed, "", "optional"},
		{"optional, none", "optional.example.com", nil, "", "optional"},
		{"optional, untrusted", "optional.example.com", self, "does not trust the client's certificate", ""},
		{"no validation asks for nothing", "shop.example.com", signed, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := envoysim.Request{Port: port, TLS: true, SNI: tc.host, Method: "GET", Authority: tc.host, Path: "/",
				ClientCertificate: func() [][]byte { return tc.cert }}
			a, err := sim.Simulate(req)
			if tc.fail != "" {
				if err == nil || !strings.Contains(err.Error(), tc.fail) {
					t.Fatalf("err = %v, want one saying %q", err, tc.fail)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if a.ClientCertificate != tc.asks || a.Upstream == nil {
				t.Errorf("client certificate %q, upstream %v; want %q and forwarded", a.ClientCertificate, a.Upstream, tc.asks)
			}
		})
	}
	for _, tc := range []struct {
		host     string
		min, max uint16
	}{
		{"mtls.example.com", tls.VersionTLS13, tls.VersionTLS13},
		{"optional.example.com", tls.VersionTLS12, tls.VersionTLS12},
		{"shop.example.com", tls.VersionTLS12, tls.VersionTLS13},
	} {
		c, err := sim.Connect(envoysim.Request{Port: port, TLS: true, SNI: tc.host})
		if err != nil {
			t.Fatal(err)
		}
		if c.TLS == nil || c.TLS.MinVersion != tc.min || c.TLS.MaxVersion != tc.max {
			t.Errorf("%s: TLS %+v, want versions %x to %x", tc.host, c.TLS, tc.min, tc.max)
		}
	}
}
