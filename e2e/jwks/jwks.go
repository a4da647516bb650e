// Package jwks is the issuer of the JWTs the e2e tests send: a key that
// signs tokens, and the JSON Web Key Set a JWKS endpoint serves for it
// (in the tests' own process, or the fleet's as a Pod: cmd/jwks-server).
package jwks

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"net/http"
	"sync/atomic"

	jose "github.com/go-jose/go-jose/v4"
)

// Issuer signs tokens with an ES256 key of its key ID.
type Issuer struct {
	key *ecdsa.PrivateKey
	kid string
}

// NewIssuer makes an issuer with a new key.
func NewIssuer(kid string) (*Issuer, error) {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	return &Issuer{key: k, kid: kid}, nil
}

// KeySet is the JWKS of the issuer's public key.
func (i *Issuer) KeySet() []byte {
	doc, err := json.Marshal(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: i.key.Public(), KeyID: i.kid, Algorithm: string(jose.ES256), Use: "sig"}}})
	if err != nil {
		panic(err) // a public EC key always marshals
	}
	return doc
}

// Token signs claims as a compact JWS.
func (i *Issuer) Token(claims map[string]any) (string, error) {
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: i.key}, (&jose.SignerOptions{}).WithType("JWT").WithHeader("kid", i.kid))
	if err != nil {
		return "", err
	}
	payload, err := json.Marshal(claims)
	if err != nil {
		return "", err
	}
	obj, err := s.Sign(payload)
	if err != nil {
		return "", fmt.Errorf("signing: %w", err)
	}
	return obj.CompactSerialize()
}

// Server serves a key set at every path, and counts the fetches.
type Server struct {
	Doc     []byte
	Fetches atomic.Int64
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		http.Error(w, "GET only", http.StatusMethodNotAllowed)
		return
	}
	s.Fetches.Add(1)
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(s.Doc)
}
