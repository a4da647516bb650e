package envoysim

import (
	"crypto/x509"
	"errors"
	"fmt"
	"strings"

	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
)

// systemCAs is the file a validation context names for the system's
// trusted CAs (Debian's bundle, which our Envoy image has).
const systemCAs = "/etc/ssl/certs/ca-certificates.crt"

// VerifyUpstream checks a backend's certificate chain as Envoy's upstream
// TLS does for a cluster: against the validation context's trusted_ca, and,
// when it has match_typed_subject_alt_names, that one of them matches a
// subject alternative name of that type (an exact DNS matcher accepts a
// wildcard name in the certificate, as Envoy's dnsNameMatch does). Envoy
// does not check the certificate against the SNI it sends. A cluster
// without TLS accepts anything.
func (s *Simulator) VerifyUpstream(cluster string, chain []*x509.Certificate) error {
	c := s.clusters[cluster]
	if c == nil {
		return fmt.Errorf("cluster %s is not served", cluster)
	}
	ts := c.GetTransportSocket()
	if ts == nil {
		return nil
	}
	if len(chain) == 0 {
		return errors.New("the backend presents no certificate")
	}
	ctx, err := unpack[tlsv3.UpstreamTlsContext](ts.GetTypedConfig(), "cluster "+cluster+" transport socket")
	if err != nil {
		return err
	}
	vc, err := s.validationContext(ctx.GetCommonTlsContext())
	if err != nil {
		return fmt.Errorf("cluster %s: %w", cluster, err)
	}
	if vc == nil {
		return nil // no validation: Envoy accepts any certificate
	}
	if err := understand(vc, "trusted_ca", "match_typed_subject_alt_names"); err != nil {
		return err
	}
	if ca := vc.GetTrustedCa(); ca != nil {
		var roots *x509.CertPool
		switch {
		case len(ca.GetInlineBytes()) > 0:
			roots = x509.NewCertPool()
			if !roots.AppendCertsFromPEM(ca.GetInlineBytes()) {
				return fmt.Errorf("cluster %s: trusted_ca holds no PEM certificate: Envoy rejects the cluster", cluster)
			}
		case ca.GetFilename() == systemCAs:
			if roots, err = x509.SystemCertPool(); err != nil {
				return err
			}
		default:
			return errUnsupportedf("cluster %s: trusted_ca %v", cluster, ca)
		}
		inter := x509.NewCertPool()
		for _, ic := range chain[1:] {
			inter.AddCert(ic)
		}
		if _, err := chain[0].Verify(x509.VerifyOptions{Roots: roots, Intermediates: inter, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}}); err != nil {
			return fmt.Errorf("upstream TLS: CERTIFICATE_VERIFY_FAILED: %w", err)
		}
	}
	matchers := vc.GetMatchTypedSubjectAltNames()
	if len(matchers) == 0 {
		return nil
	}
	leaf := chain[0]
	for _, m := range matchers {
		var names []string
		switch m.GetSanType() {
		case tlsv3.SubjectAltNameMatcher_DNS:
			if exact := m.GetMatcher().GetExact(); exact != "" {
				for _, n := range leaf.DNSNames {
					if dnsNameMatch(exact, n) {
						return nil
					}
				}
				continue
			}
			names = leaf.DNSNames
		case tlsv3.SubjectAltNameMatcher_URI:
			for _, u := range leaf.URIs {
				names = append(names, u.String())
			}
		case tlsv3.SubjectAltNameMatcher_EMAIL:
			names = leaf.EmailAddresses
		case tlsv3.SubjectAltNameMatcher_IP_ADDRESS:
			for _, ip := range leaf.IPAddresses {
				names = append(names, ip.String())
			}
		default:
			return errUnsupportedf("cluster %s: SAN type %v", cluster, m.GetSanType())
		}
		for _, n := range names {
			ok, err := stringMatches(m.GetMatcher(), n)
			if err != nil {
				return err
			}
			if ok {
				return nil
			}
		}
	}
	return errors.New("upstream TLS: no subject alternative name of the certificate matches the validation context")
}

// validationContext is the one a CommonTlsContext uses: inline, from SDS,
// or SDS's with the default's fields where it has none (combined).
func (s *Simulator) validationContext(cc *tlsv3.CommonTlsContext) (*tlsv3.CertificateValidationContext, error) {
	fromSDS := func(name string) (*tlsv3.CertificateValidationContext, error) {
		sec, ok := s.secrets[name]
		if !ok || sec.GetValidationContext() == nil {
			return nil, fmt.Errorf("validation context secret %q is not served", name)
		}
		return sec.GetValidationContext(), nil
	}
	switch v := cc.GetValidationContextType().(type) {
	case nil:
		return nil, nil
	case *tlsv3.CommonTlsContext_ValidationContext:
		return v.ValidationContext, nil
	case *tlsv3.CommonTlsContext_ValidationContextSdsSecretConfig:
		return fromSDS(v.ValidationContextSdsSecretConfig.GetName())
	case *tlsv3.CommonTlsContext_CombinedValidationContext:
		sds, err := fromSDS(v.CombinedValidationContext.GetValidationContextSdsSecretConfig().GetName())
		if err != nil {
			return nil, err
		}
		def := v.CombinedValidationContext.GetDefaultValidationContext()
		out := &tlsv3.CertificateValidationContext{TrustedCa: sds.GetTrustedCa(), MatchTypedSubjectAltNames: sds.GetMatchTypedSubjectAltNames()}
		if out.TrustedCa == nil {
			out.TrustedCa = def.GetTrustedCa()
		}
		if len(out.MatchTypedSubjectAltNames) == 0 {
			out.MatchTypedSubjectAltNames = def.GetMatchTypedSubjectAltNames()
		}
		return out, nil
	default:
		return nil, errUnsupportedf("validation context %T", v)
	}
}

// dnsNameMatch is Envoy's: a certificate name "*.example.com" matches one
// label in its place.
func dnsNameMatch(name, pattern string) bool {
	name, pattern = strings.ToLower(name), strings.ToLower(pattern)
	if name == pattern {
		return true
	}
	if !strings.HasPrefix(pattern, "*.") {
		return false
	}
	first, rest, ok := strings.Cut(name, ".")
	return ok && first != "" && "."+rest == pattern[1:]
}
