package envoysim

import (
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"slices"
	"strings"

	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
)

const xfcc = "x-forwarded-client-cert"

// forwardClientCert follows forward_client_cert_details: SANITIZE (the
// default) removes a request's x-forwarded-client-cert, FORWARD_ONLY
// keeps it, and SANITIZE_SET replaces it with the details of the client's
// certificate (peer, DER, leaf first) or, without one, removes it
// (conn_manager_utility: mutateXfccRequestHeader).
func forwardClientCert(hcm *hcmv3.HttpConnectionManager, peer [][]byte, local *x509.Certificate, r *httpRequest) error {
	switch hcm.GetForwardClientCertDetails() {
	case hcmv3.HttpConnectionManager_FORWARD_ONLY:
		return nil
	case hcmv3.HttpConnectionManager_SANITIZE, hcmv3.HttpConnectionManager_SANITIZE_SET:
	default:
		return errUnsupportedf("forward_client_cert_details %v", hcm.GetForwardClientCertDetails())
	}
	r.headers = slices.DeleteFunc(r.headers, func(h Header) bool { return h.Name == xfcc })
	if hcm.GetForwardClientCertDetails() != hcmv3.HttpConnectionManager_SANITIZE_SET || len(peer) == 0 {
		return nil
	}
	leaf, err := x509.ParseCertificate(peer[0])
	if err != nil {
		return fmt.Errorf("the client's certificate does not parse: %w", err)
	}
	// Envoy's order: By (the first URI SAN of the certificate Envoy
	// presented), Hash, then the details in the order of
	// set_current_client_cert_details' fields.
	var parts []string
	if local != nil && len(local.URIs) > 0 {
		parts = append(parts, "By="+local.URIs[0].String())
	}
	sum := sha256.Sum256(peer[0])
	parts = append(parts, "Hash="+hex.EncodeToString(sum[:]))
	d := hcm.GetSetCurrentClientCertDetails()
	if d.GetCert() {
		parts = append(parts, `Cert="`+urlEncode(pemOf(peer[:1]))+`"`)
	}
	if d.GetChain() {
		parts = append(parts, `Chain="`+urlEncode(pemOf(peer))+`"`)
	}
	if d.GetSubject().GetValue() {
		parts = append(parts, `Subject="`+leaf.Subject.String()+`"`)
	}
	if d.GetUri() {
		if len(leaf.URIs) == 0 {
			parts = append(parts, "URI=")
		}
		for _, u := range leaf.URIs {
			parts = append(parts, "URI="+u.String())
		}
	}
	if d.GetDns() {
		for _, n := range leaf.DNSNames {
			parts = append(parts, "DNS="+n)
		}
	}
	r.headers = append(r.headers, Header{Name: xfcc, Value: strings.Join(parts, ";")})
	return nil
}

func pemOf(chain [][]byte) string {
	var b strings.Builder
	for _, der := range chain {
		b.Write(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
	}
	return b.String()
}

// urlEncode percent-encodes all but the unreserved characters of RFC 3986,
// as Envoy encodes a PEM certificate for the header.
func urlEncode(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~' {
			b.WriteByte(c)
			continue
		}
		fmt.Fprintf(&b, "%%%02X", c)
	}
	return b.String()
}

// localCertificate is the leaf of the first certificate a filter chain
// presents (SDS secret names), nil when there is none.
func (s *Simulator) localCertificate(names []string) *x509.Certificate {
	if len(names) == 0 {
		return nil
	}
	b, _ := pem.Decode(s.secrets[names[0]].GetTlsCertificate().GetCertificateChain().GetInlineBytes())
	if b == nil {
		return nil
	}
	c, err := x509.ParseCertificate(b.Bytes)
	if err != nil {
		return nil
	}
	return c
}
