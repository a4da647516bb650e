package offline

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"strings"
	"testing"
	"time"

	"isobar.dev/api/ports"
	"isobar.dev/controller/pkg/envoysim"
	"isobar.dev/controller/pkg/resources"
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
	signed, self := clientCerts(t, res, "default", "bench-tls")
	https := uint32(ports.ContainerPort(443))
	playHandshakes(t, sim, []handshake{
		{"required, signed", https, "app.example.com", signed, "", "required"},
		{"required, none", https, "app.example.com", nil, "requires a client certificate", ""},
		{"required, untrusted", https, "app.example.com", self, "does not trust the client's certificate", ""},
		{"fallback, signed", 8443, "app.example.com", signed, "", "optional"},
		{"fallback, none", 8443, "app.example.com", nil, "", "optional"},
		{"fallback, untrusted", 8443, "app.example.com", self, "", "optional"},
		{"one of two CAs resolves", 4443, "app.example.com", signed, "", "required"},
		{"one of two CAs resolves, none", 4443, "app.example.com", nil, "requires a client certificate", ""},
	})
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
	return clientCertSerial(t, ca, caKey, big.NewInt(time.Now().UnixNano()))
}

// clientCertSerial is clientCert with the given serial number.
func clientCertSerial(t *testing.T, ca *x509.Certificate, caKey any, serial *big.Int) [][]byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial, Subject: pkix.Name{CommonName: "client"},
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
	signed, self := clientCerts(t, res, "certs", "shop-tls")
	port := uint32(ports.ContainerPort(443))
	playHandshakes(t, sim, []handshake{
		{"required, signed", port, "mtls.example.com", signed, "", "required"},
		{"required, none", port, "mtls.example.com", nil, "requires a client certificate", ""},
		{"required, untrusted", port, "mtls.example.com", self, "does not trust the client's certificate", ""},
		{"optional, signed", port, "optional.example.com", signed, "", "optional"},
		{"optional, none", port, "optional.example.com", nil, "", "optional"},
		{"optional, untrusted", port, "optional.example.com", self, "does not trust the client's certificate", ""},
		{"no validation asks for nothing", port, "shop.example.com", signed, "", ""},
		{"skipClientCertValidation accepts any", port, "skip.example.com", self, "", "required"},
		{"skipClientCertValidation requires one", port, "skip.example.com", nil, "requires a client certificate", ""},
	})
	// forwardClientCertificate: the client's certificate's details replace
	// a forged header; without it the header is removed.
	xfcc := func(host string) string {
		a, err := sim.Simulate(envoysim.Request{Port: port, TLS: true, SNI: host, Method: "GET", Authority: host, Path: "/",
			Headers:           []envoysim.Header{{Name: "x-forwarded-client-cert", Value: "Hash=forged"}},
			ClientCertificate: func() [][]byte { return signed }})
		if err != nil || a.Upstream == nil || a.Upstream.Request == nil {
			t.Fatalf("%s: %v, %+v", host, err, a)
		}
		var vals []string
		for _, h := range a.Upstream.Request.Headers {
			if h.Name == "x-forwarded-client-cert" {
				vals = append(vals, h.Value)
			}
		}
		return strings.Join(vals, ",")
	}
	leaf, err := x509.ParseCertificate(signed[0])
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(signed[0])
	pemCert := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: signed[0]})
	want := fmt.Sprintf(`Hash=%x;Cert="%s";Subject="%s";URI=`, sum, strings.NewReplacer("\n", "%0A", "+", "%2B", "/", "%2F", "=", "%3D", " ", "%20").Replace(string(pemCert)), leaf.Subject)
	if got := xfcc("mtls.example.com"); got != want {
		t.Errorf("x-forwarded-client-cert upstream:\n got %s\nwant %s", got, want)
	}
	if got := xfcc("optional.example.com"); got != "" {
		t.Errorf("without forwardClientCertificate, x-forwarded-client-cert upstream is %q, want none", got)
	}
	// crl-ca signs; its revocation list revokes serial 4242.
	crlCA, crlKey := signingCA(t, res, "certs", "crl-ca-key")
	playHandshakes(t, sim, []handshake{
		{"not revoked", port, "crl.example.com", clientCertSerial(t, crlCA, crlKey, big.NewInt(7)), "", "required"},
		{"revoked", port, "crl.example.com", clientCertSerial(t, crlCA, crlKey, big.NewInt(4242)), "is revoked", ""},
		{"another CA's, with no list", port, "crl.example.com", signed, "does not trust", ""},
	})
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

// handshake is a TLS handshake with a client certificate (nil for none)
// and what comes of it.
type handshake struct {
	name string
	port uint32
	host string
	cert [][]byte
	fail string // in the error; "" for success
	asks string // Answer.ClientCertificate
}

func playHandshakes(t *testing.T, sim *envoysim.Simulator, cases []handshake) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			asked := false
			req := envoysim.Request{Port: tc.port, TLS: true, SNI: tc.host, Method: "GET", Authority: tc.host, Path: "/",
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
			if asked != (tc.asks != "") || a.ClientCertificate != tc.asks || a.Upstream == nil {
				t.Errorf("asked %v, client certificate %q, upstream %v; want %q and forwarded", asked, a.ClientCertificate, a.Upstream, tc.asks)
			}
		})
	}
}

// clientCerts are a client certificate signed by the CA of the TLS
// Secret ns/name of res, and a self-signed one.
func clientCerts(t *testing.T, res *resources.Resources, ns, name string) (signed, self [][]byte) {
	t.Helper()
	ca, key := signingCA(t, res, ns, name)
	return clientCert(t, ca, key), clientCert(t, nil, nil)
}

// signingCA is the certificate and key of the TLS Secret ns/name of res.
func signingCA(t *testing.T, res *resources.Resources, ns, name string) (*x509.Certificate, any) {
	t.Helper()
	for _, s := range res.Secrets {
		if s.Namespace != ns || s.Name != name {
			continue
		}
		ca, err := tls.X509KeyPair(s.Data["tls.crt"], s.Data["tls.key"])
		if err != nil {
			t.Fatal(err)
		}
		caCert, err := x509.ParseCertificate(ca.Certificate[0])
		if err != nil {
			t.Fatal(err)
		}
		return caCert, ca.PrivateKey
	}
	t.Fatalf("no Secret %s/%s", ns, name)
	return nil, nil
}
