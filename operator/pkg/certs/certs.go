// Package certs issues a fleet's xDS certificates: a CA per Gateway, a
// server certificate for the controller and a client certificate for
// Envoy, and says when they need renewing. Both sides load them from files
// they watch, so a renewal needs no restart.
package certs

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"time"
)

// Lifetimes. A leaf is renewed when a third of its life is left, so a
// missed reconcile or two never lets one expire.
const (
	CALifetime   = 5 * 365 * 24 * time.Hour
	LeafLifetime = 90 * 24 * time.Hour
)

// Keys of a CA's own Secret, which only the operator reads: its
// certificate is under fleet.CAKey, like a leaf's bundle, and while the CA
// is replaced the old one is kept under the Previous keys. A leaf's Secret
// keys are fleet's (CertKey, KeyKey, CAKey).
const (
	CAPrivateKey   = "ca.key"
	PreviousCACert = "previous-ca.crt"
	PreviousCAKey  = "previous-ca.key"
)

// NewCA returns a self-signed CA certificate and key, PEM-encoded.
func NewCA(name string, now time.Time) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: name, Organization: []string{"isobar"}},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(CALifetime),
		IsCA:                  true,
		BasicConstraintsValid: true,
		MaxPathLenZero:        true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, err
	}
	return encode(der, key)
}

// Issue signs a leaf certificate for dnsNames (the first is its common
// name) with the CA, for server or client use.
func Issue(caCertPEM, caKeyPEM []byte, dnsNames []string, server bool, now time.Time) (certPEM, keyPEM []byte, err error) {
	ca, caKey, err := parseCA(caCertPEM, caKeyPEM)
	if err != nil {
		return nil, nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	usage := x509.ExtKeyUsageClientAuth
	if server {
		usage = x509.ExtKeyUsageServerAuth
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: dnsNames[0], Organization: []string{"isobar"}},
		DNSNames:     dnsNames,
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(LeafLifetime),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{usage},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return nil, nil, err
	}
	return encode(der, key)
}

// RenewAt is when a certificate should be replaced: once two thirds of its
// lifetime have passed. An unreadable certificate should be replaced now.
func RenewAt(certPEM []byte) time.Time {
	c, err := parseCert(certPEM)
	if err != nil {
		return time.Time{}
	}
	return c.NotBefore.Add(c.NotAfter.Sub(c.NotBefore) * 2 / 3)
}

// SignedBy reports whether a certificate chains to one of the CAs of a
// PEM bundle and is valid for names at now: after a CA is replaced, its
// leaves must be reissued.
func SignedBy(certPEM, caBundlePEM []byte, names []string, now time.Time) bool {
	c, err := parseCert(certPEM)
	if err != nil {
		return false
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(caBundlePEM) {
		return false
	}
	if _, err := c.Verify(x509.VerifyOptions{Roots: roots, CurrentTime: now, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}}); err != nil {
		return false
	}
	for _, n := range names {
		if c.VerifyHostname(n) != nil {
			return false
		}
	}
	return true
}

// NotAfter is when a certificate expires; the zero time when it is
// unreadable.
func NotAfter(certPEM []byte) time.Time {
	c, err := parseCert(certPEM)
	if err != nil {
		return time.Time{}
	}
	return c.NotAfter
}

func parseCA(certPEM, keyPEM []byte) (*x509.Certificate, *ecdsa.PrivateKey, error) {
	ca, err := parseCert(certPEM)
	if err != nil {
		return nil, nil, fmt.Errorf("CA certificate: %w", err)
	}
	b, _ := pem.Decode(keyPEM)
	if b == nil {
		return nil, nil, errors.New("CA key: no PEM block")
	}
	key, err := x509.ParseECPrivateKey(b.Bytes)
	if err != nil {
		return nil, nil, fmt.Errorf("CA key: %w", err)
	}
	return ca, key, nil
}

func parseCert(certPEM []byte) (*x509.Certificate, error) {
	b, _ := pem.Decode(certPEM)
	if b == nil || b.Type != "CERTIFICATE" {
		return nil, errors.New("no PEM certificate")
	}
	return x509.ParseCertificate(b.Bytes)
}

func encode(der []byte, key *ecdsa.PrivateKey) ([]byte, []byte, error) {
	k, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: k}), nil
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		panic(err) // crypto/rand does not fail on supported platforms
	}
	return n
}
