package validate

import (
	"bytes"
	"crypto/x509"
	"encoding/pem"
	"fmt"
)

// CABundle requires what Envoy loads as trusted CAs: PEM certificates,
// at least one, every one of which parses, and nothing else. Envoy refuses
// a listener or cluster whose CA does not load, with every other chain of
// the listener: a bad bundle must be refused where it is referenced.
func CABundle(data []byte) error {
	n := 0
	for rest := data; ; {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			if len(bytes.TrimSpace(rest)) > 0 {
				return fmt.Errorf("holds something other than PEM certificates")
			}
			break
		}
		if b.Type != "CERTIFICATE" {
			return fmt.Errorf("holds a PEM %s, not a CERTIFICATE", b.Type)
		}
		if _, err := x509.ParseCertificate(b.Bytes); err != nil {
			return fmt.Errorf("certificate %d: %w", n+1, err)
		}
		n++
	}
	if n == 0 {
		return fmt.Errorf("is missing or holds no PEM certificate")
	}
	return nil
}

// CRLs requires PEM certificate revocation lists, at least one, every one
// of which parses, and nothing else, as Envoy loads a crl.
func CRLs(data []byte) error {
	n := 0
	for rest := data; ; {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			if len(bytes.TrimSpace(rest)) > 0 {
				return fmt.Errorf("holds something other than PEM revocation lists")
			}
			break
		}
		if b.Type != "X509 CRL" {
			return fmt.Errorf("holds a PEM %s, not an X509 CRL", b.Type)
		}
		if _, err := x509.ParseRevocationList(b.Bytes); err != nil {
			return fmt.Errorf("revocation list %d: %w", n+1, err)
		}
		n++
	}
	if n == 0 {
		return fmt.Errorf("is missing or holds no PEM revocation list")
	}
	return nil
}
