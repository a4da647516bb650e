package harness

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"time"
)

// PKI is a fleet's certificates as files: a CA, a server certificate for the
// controller's xDS server and a client certificate for Envoy. The operator
// issues the real ones; tests use these.
type PKI struct {
	CA                    string
	ServerCert, ServerKey string
	ClientCert, ClientKey string
}

// NewPKI writes a fresh CA and certificates into dir; the server
// certificate names serverName.
func NewPKI(dir, serverName string) (*PKI, error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "isobar test fleet CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, err
	}
	p := &PKI{}
	if p.CA, err = writePEM(dir, "ca.crt", "CERTIFICATE", caDER); err != nil {
		return nil, err
	}
	leaf := func(name string, usage x509.ExtKeyUsage, dns []string) (string, string, error) {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return "", "", err
		}
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(now.UnixNano()), Subject: pkix.Name{CommonName: name},
			NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour), DNSNames: dns,
			ExtKeyUsage: []x509.ExtKeyUsage{usage}, KeyUsage: x509.KeyUsageDigitalSignature,
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
		if err != nil {
			return "", "", err
		}
		keyDER, err := x509.MarshalECPrivateKey(key)
		if err != nil {
			return "", "", err
		}
		crt, err := writePEM(dir, name+".crt", "CERTIFICATE", der)
		if err != nil {
			return "", "", err
		}
		k, err := writePEM(dir, name+".key", "EC PRIVATE KEY", keyDER)
		return crt, k, err
	}
	if p.ServerCert, p.ServerKey, err = leaf("xds-server", x509.ExtKeyUsageServerAuth, []string{serverName}); err != nil {
		return nil, fmt.Errorf("server certificate: %w", err)
	}
	if p.ClientCert, p.ClientKey, err = leaf("envoy", x509.ExtKeyUsageClientAuth, nil); err != nil {
		return nil, fmt.Errorf("client certificate: %w", err)
	}
	return p, nil
}

func writePEM(dir, name, typ string, der []byte) (string, error) {
	path := filepath.Join(dir, name)
	return path, os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600)
}
