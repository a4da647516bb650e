package envoysim

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"errors"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
)

// signJWT signs claims with key as the JWS compact token Envoy reads.
func signJWT(t *testing.T, alg jose.SignatureAlgorithm, key any, kid string, claims map[string]any) string {
	t.Helper()
	opts := (&jose.SignerOptions{}).WithType("JWT")
	if kid != "" {
		opts = opts.WithHeader("kid", kid)
	}
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: alg, Key: key}, opts)
	if err != nil {
		t.Fatal(err)
	}
	payload, err := json.Marshal(claims)
	if err != nil {
		t.Fatal(err)
	}
	obj, err := s.Sign(payload)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := obj.CompactSerialize()
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// TestJWTVerify plays Envoy's verdicts on tokens, in the order its
// authenticator checks them, against a JWKS of an EC and an RSA key.
func TestJWTVerify(t *testing.T) {
	ec, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	rs, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	other, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	jwks, err := json.Marshal(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{
		{Key: ec.Public(), KeyID: "ec", Algorithm: string(jose.ES256), Use: "sig"},
		{Key: rs.Public(), KeyID: "rsa", Algorithm: string(jose.RS256), Use: "sig"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1_900_000_000, 0)
	claims := func(over map[string]any) map[string]any {
		c := map[string]any{"iss": "https://idp.example.com", "aud": "shop", "exp": now.Add(time.Hour).Unix(), "sub": "alice"}
		for k, v := range over {
			if v == nil {
				delete(c, k)
			} else {
				c[k] = v
			}
		}
		return c
	}
	fetched := func() ([]byte, error) { return jwks, nil }
	for _, tc := range []struct {
		name   string
		token  string
		keys   func() ([]byte, error)
		status int
		body   string
	}{
		{name: "EC key", token: signJWT(t, jose.ES256, ec, "ec", claims(nil))},
		{name: "RSA key", token: signJWT(t, jose.RS256, rs, "rsa", claims(nil))},
		{name: "no kid: any key of the algorithm", token: signJWT(t, jose.ES256, ec, "", claims(nil))},
		{name: "audience among several", token: signJWT(t, jose.ES256, ec, "ec", claims(map[string]any{"aud": []string{"other", "shop-admin"}}))},
		{name: "expired within the clock skew", token: signJWT(t, jose.ES256, ec, "ec", claims(map[string]any{"exp": now.Add(-30 * time.Second).Unix()}))},
		{name: "expired", token: signJWT(t, jose.ES256, ec, "ec", claims(map[string]any{"exp": now.Add(-2 * time.Minute).Unix()})), status: 401, body: jwtExpired},
		{name: "not yet valid", token: signJWT(t, jose.ES256, ec, "ec", claims(map[string]any{"nbf": now.Add(time.Hour).Unix()})), status: 401, body: jwtNotYetValid},
		{name: "another issuer", token: signJWT(t, jose.ES256, ec, "ec", claims(map[string]any{"iss": "https://evil.example.com"})), status: 401, body: jwtUnknownIssuer},
		{name: "another audience", token: signJWT(t, jose.ES256, ec, "ec", claims(map[string]any{"aud": "blog"})), status: 403, body: jwtAudience},
		{name: "no audience", token: signJWT(t, jose.ES256, ec, "ec", claims(map[string]any{"aud": nil})), status: 403, body: jwtAudience},
		{name: "signed by another key", token: signJWT(t, jose.ES256, other, "ec", claims(nil)), status: 401, body: jwtVerifyFails},
		{name: "a kid the JWKS has not", token: signJWT(t, jose.ES256, ec, "gone", claims(nil)), status: 401, body: jwksNoKey},
		{name: "an algorithm the kid's key has not", token: signJWT(t, jose.ES384, mustEC(t, elliptic.P384()), "ec", claims(nil)), status: 401, body: jwksNoKey},
		{name: "keys not fetched", token: signJWT(t, jose.ES256, ec, "ec", claims(nil)), keys: func() ([]byte, error) { return nil, errors.New("refused") }, status: 401, body: jwksFetchFailed},
		{name: "keys not a JWKS", token: signJWT(t, jose.ES256, ec, "ec", claims(nil)), keys: func() ([]byte, error) { return []byte("<html>"), nil }, status: 401, body: jwksFetchFailed},
		{name: "not a token", token: "abc", status: 401, body: jwtBadFormat},
		{name: "a header that is no JSON", token: "e30x.e30.e30", status: 401, body: jwtBadHeader},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &JWTCheck{Issuer: "https://idp.example.com", Audiences: []string{"shop", "shop-admin"}, Token: tc.token, realm: "https://shop.example.com/"}
			keys := fetched
			if tc.keys != nil {
				keys = tc.keys
			}
			resp := c.Verify(now, keys)
			switch {
			case tc.status == 0 && resp != nil:
				t.Fatalf("Envoy answers %d %q, want the request let through", resp.Status, resp.Body)
			case tc.status == 0:
				return
			case resp == nil:
				t.Fatalf("the request is let through, want %d %q", tc.status, tc.body)
			case resp.Status != tc.status || resp.Body != tc.body:
				t.Fatalf("Envoy answers %d %q, want %d %q", resp.Status, resp.Body, tc.status, tc.body)
			}
			want := `Bearer realm="https://shop.example.com/", error="invalid_token"`
			if len(resp.Headers) != 1 || resp.Headers[0].Value != want {
				t.Errorf("headers %v, want www-authenticate %s", resp.Headers, want)
			}
		})
	}
	// The keys are fetched only for a token that passes the checks that
	// need none.
	fetches := 0
	c := &JWTCheck{Issuer: "https://idp.example.com", Token: signJWT(t, jose.ES256, ec, "ec", claims(map[string]any{"iss": "x"}))}
	c.Verify(now, func() ([]byte, error) { fetches++; return jwks, nil })
	if fetches != 0 {
		t.Errorf("a token of another issuer fetched the keys %d times", fetches)
	}
}

func mustEC(t *testing.T, c elliptic.Curve) *ecdsa.PrivateKey {
	t.Helper()
	k, err := ecdsa.GenerateKey(c, rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}
