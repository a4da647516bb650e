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
	return pemOf(data, "CERTIFICATE", "certificate", func(der []byte) error {
		_, err := x509.ParseCertificate(der)
		return err
	})
}

// CRLs requires PEM certificate revocation lists, at least one, every one
// of which parses, and nothing else, as Envoy loads a crl.
func CRLs(data []byte) error {
	return pemOf(data, "X509 CRL", "revocation list", func(der []byte) error {
		_, err := x509.ParseRevocationList(der)
		return err
	})
}

// pemOf requires PEM blocks of one type, at least one, each of which
// parse accepts, and nothing else.
func pemOf(data []byte, typ, what string, parse func([]byte) error) error {
	n := 0
	for rest := data; ; {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			if len(bytes.TrimSpace(rest)) > 0 {
				return fmt.Errorf("holds something other than PEM %ss", what)
			}
			break
		}
		if b.Type != typ {
			return fmt.Errorf("holds a PEM %s, where only %s blocks belong", b.Type, typ)
		}
		if err := parse(b.Bytes); err != nil {
			return fmt.Errorf("%s %d: %w", what, n+1, err)
		}
		n++
	}
	if n == 0 {
		return fmt.Errorf("is missing or holds no PEM %s", what)
	}
	return nil
}
