package harness

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"isobar.dev/operator/pkg/certs"
)

// PKI is a fleet's certificates as files: a CA, a server certificate for the
// controller's xDS server and a client certificate for Envoy. The operator
// issues the real ones; tests use these.
type PKI struct {
	CA                    string
	ServerCert, ServerKey string
	ClientCert, ClientKey string
}

// NewPKI writes a fresh CA and certificates into dir, issued as the
// operator issues them; the server certificate names serverName.
func NewPKI(dir, serverName string) (*PKI, error) {
	now := time.Now()
	caCert, caKey, err := certs.NewCA("isobar test fleet CA", now)
	if err != nil {
		return nil, err
	}
	p := &PKI{}
	if p.CA, err = write(dir, "ca.crt", caCert); err != nil {
		return nil, err
	}
	leaf := func(name string, server bool, dns string) (string, string, error) {
		crt, key, err := certs.Issue(caCert, caKey, []string{dns}, server, now)
		if err != nil {
			return "", "", err
		}
		crtPath, err := write(dir, name+".crt", crt)
		if err != nil {
			return "", "", err
		}
		keyPath, err := write(dir, name+".key", key)
		return crtPath, keyPath, err
	}
	if p.ServerCert, p.ServerKey, err = leaf("xds-server", true, serverName); err != nil {
		return nil, fmt.Errorf("server certificate: %w", err)
	}
	if p.ClientCert, p.ClientKey, err = leaf("envoy", false, "envoy.test"); err != nil {
		return nil, fmt.Errorf("client certificate: %w", err)
	}
	return p, nil
}

func write(dir, name string, data []byte) (string, error) {
	path := filepath.Join(dir, name)
	return path, os.WriteFile(path, data, 0o600)
}
