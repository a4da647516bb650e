package envoysim

import (
	"crypto/x509"
	"fmt"

	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
)

// clientValidation is what a DownstreamTlsContext asks of clients'
// certificates (common.proto: CertificateValidationContext; tls.proto:
// require_client_certificate).
type clientValidation struct {
	roots *x509.CertPool
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
	if err := understand(vc, "trusted_ca", "trust_chain_verification"); err != nil {
		return nil, err
	}
	ca := vc.GetTrustedCa().GetInlineBytes()
	if len(ca) == 0 {
		ca = []byte(vc.GetTrustedCa().GetInlineString())
	}
	v := &clientValidation{
		roots:           x509.NewCertPool(),
		required:        ctx.GetRequireClientCertificate().GetValue(),
		acceptUntrusted: vc.GetTrustChainVerification() == tlsv3.CertificateValidationContext_ACCEPT_UNTRUSTED,
	}
	if !v.roots.AppendCertsFromPEM(ca) {
		return nil, fmt.Errorf("validation context trusted_ca holds no certificate: Envoy refuses the listener")
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
	if v.acceptUntrusted {
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
	if _, err := certs[0].Verify(x509.VerifyOptions{Roots: v.roots, Intermediates: inter, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		return fmt.Errorf("TLS handshake fails: Envoy does not trust the client's certificate %q: %w", certs[0].Subject.CommonName, err)
	}
	return nil
}
