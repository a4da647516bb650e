package envoysim

import (
	"bytes"
	"crypto/x509"
	"encoding/pem"
	"fmt"

	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
)

// clientValidation is what a DownstreamTlsContext asks of clients'
// certificates (common.proto: CertificateValidationContext; tls.proto:
// require_client_certificate).
type clientValidation struct {
	// roots verify a certificate; nil verifies none (no trusted_ca).
	roots *x509.CertPool
	// crls, when set, are the revocation lists a verified chain is
	// checked against: the leaf's only when leafOnly.
	crls     []*x509.RevocationList
	leafOnly bool
	// required: a client without a certificate fails the handshake.
	required bool
	// acceptUntrusted: a certificate that does not verify is let in
	// (trust_chain_verification ACCEPT_UNTRUSTED).
	acceptUntrusted bool
}

// clientValidationOf reads a DownstreamTlsContext's client certificate
// settings: nil when Envoy does not ask clients for a certificate.
func clientValidationOf(ctx *tlsv3.DownstreamTlsContext) (*clientValidation, error) {
	if err := understand(ctx, "common_tls_context", "require_client_certificate"); err != nil {
		return nil, err
	}
	if err := understand(ctx.GetCommonTlsContext(), "tls_params", "alpn_protocols", "tls_certificate_sds_secret_configs", "tls_certificates", "validation_context"); err != nil {
		return nil, err
	}
	vc := ctx.GetCommonTlsContext().GetValidationContext()
	if vc == nil {
		if ctx.GetRequireClientCertificate().GetValue() {
			return nil, fmt.Errorf("require_client_certificate without a validation context: Envoy refuses the listener")
		}
		return nil, nil
	}
	if err := understand(vc, "trusted_ca", "trust_chain_verification", "crl", "only_verify_leaf_cert_crl"); err != nil {
		return nil, err
	}
	v := &clientValidation{
		required:        ctx.GetRequireClientCertificate().GetValue(),
		acceptUntrusted: vc.GetTrustChainVerification() == tlsv3.CertificateValidationContext_ACCEPT_UNTRUSTED,
		leafOnly:        vc.GetOnlyVerifyLeafCertCrl(),
	}
	if vc.GetTrustedCa() != nil {
		ca := vc.GetTrustedCa().GetInlineBytes()
		if len(ca) == 0 {
			ca = []byte(vc.GetTrustedCa().GetInlineString())
		}
		v.roots = x509.NewCertPool()
		if !v.roots.AppendCertsFromPEM(ca) {
			return nil, fmt.Errorf("validation context trusted_ca holds no certificate: Envoy refuses the listener")
		}
	}
	if crl := vc.GetCrl(); crl != nil {
		if v.roots == nil {
			return nil, fmt.Errorf("validation context has a crl without a trusted_ca: Envoy refuses the listener")
		}
		rest := crl.GetInlineBytes()
		for {
			var b *pem.Block
			if b, rest = pem.Decode(rest); b == nil {
				break
			}
			l, err := x509.ParseRevocationList(b.Bytes)
			if err != nil {
				return nil, fmt.Errorf("validation context crl: %w: Envoy refuses the listener", err)
			}
			v.crls = append(v.crls, l)
		}
		if len(v.crls) == 0 {
			return nil, fmt.Errorf("validation context crl holds no revocation list: Envoy refuses the listener")
		}
	}
	return v, nil
}

// check plays the client's part of the handshake: Envoy asks for a
// certificate (the client answers with chain, leaf first, or none) and
// verifies it as BoringSSL does for a TLS client, or fails the handshake.
func (v *clientValidation) check(present func() [][]byte) error {
	var chain [][]byte
	if present != nil {
		chain = present()
	}
	if len(chain) == 0 {
		if v.required {
			return fmt.Errorf("TLS handshake fails: Envoy requires a client certificate and the client presents none")
		}
		return nil
	}
	if v.acceptUntrusted || v.roots == nil {
		return nil
	}
	certs := make([]*x509.Certificate, len(chain))
	for i, der := range chain {
		c, err := x509.ParseCertificate(der)
		if err != nil {
			return fmt.Errorf("TLS handshake fails: the client's certificate %d does not parse: %w", i, err)
		}
		certs[i] = c
	}
	inter := x509.NewCertPool()
	for _, c := range certs[1:] {
		inter.AddCert(c)
	}
	chains, err := certs[0].Verify(x509.VerifyOptions{Roots: v.roots, Intermediates: inter, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
	if err != nil {
		return fmt.Errorf("TLS handshake fails: Envoy does not trust the client's certificate %q: %w", certs[0].Subject.CommonName, err)
	}
	if v.crls != nil {
		return v.checkRevocation(chains[0])
	}
	return nil
}

// checkRevocation follows BoringSSL's CRL checks, as Envoy sets them: each
// certificate of the chain but the root (the leaf only, with leafOnly)
// needs a revocation list its issuer signed, and must not be on it.
func (v *clientValidation) checkRevocation(chain []*x509.Certificate) error {
	checked := chain[:len(chain)-1]
	if v.leafOnly {
		checked = chain[:1]
	}
	for i, c := range checked {
		issuer := chain[i+1]
		var list *x509.RevocationList
		for _, l := range v.crls {
			if bytes.Equal(l.RawIssuer, issuer.RawSubject) && l.CheckSignatureFrom(issuer) == nil {
				list = l
				break
			}
		}
		if list == nil {
			return fmt.Errorf("TLS handshake fails: no revocation list of %q's issuer: Envoy cannot check %q", c.Subject.CommonName, c.Subject.CommonName)
		}
		for _, r := range list.RevokedCertificateEntries {
			if r.SerialNumber.Cmp(c.SerialNumber) == 0 {
				return fmt.Errorf("TLS handshake fails: the client's certificate %q is revoked", c.Subject.CommonName)
			}
		}
	}
	return nil
}
