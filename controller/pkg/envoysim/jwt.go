package envoysim

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	jwtv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/jwt_authn/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	jose "github.com/go-jose/go-jose/v4"
)

const jwtAuthnFilterName = "envoy.filters.http.jwt_authn"

// jwtFilter is a connection manager's jwt_authn filter, as the simulator
// models it: providers with remote JWKS, and requirements of one provider
// that routes name.
type jwtFilter struct {
	providers    map[string]*jwtv3.JwtProvider
	requirements map[string]string // requirement name -> provider name
}

func jwtAuthnFilter(hf *hcmv3.HttpFilter) (*jwtFilter, error) {
	cfg, err := unpack[jwtv3.JwtAuthentication](hf.GetTypedConfig(), "jwt_authn filter")
	if err != nil {
		return nil, err
	}
	if err := understand(cfg, "providers", "requirement_map"); err != nil {
		return nil, err
	}
	out := &jwtFilter{providers: cfg.GetProviders(), requirements: map[string]string{}}
	for name, p := range out.providers {
		if err := understand(p, "issuer", "audiences", "remote_jwks", "forward"); err != nil {
			return nil, fmt.Errorf("jwt provider %s: %w", name, err)
		}
		rj := p.GetRemoteJwks()
		if err := understand(rj, "http_uri", "cache_duration"); err != nil {
			return nil, fmt.Errorf("jwt provider %s: %w", name, err)
		}
		if err := understand(rj.GetHttpUri(), "uri", "cluster", "timeout"); err != nil {
			return nil, fmt.Errorf("jwt provider %s: %w", name, err)
		}
	}
	for name, r := range cfg.GetRequirementMap() {
		if err := understand(r, "provider_name"); err != nil {
			return nil, fmt.Errorf("jwt requirement %s: %w", name, err)
		}
		if out.providers[r.GetProviderName()] == nil {
			return nil, fmt.Errorf("jwt requirement %s names provider %q, which the filter has not: Envoy rejects the listener", name, r.GetProviderName())
		}
		out.requirements[name] = r.GetProviderName()
	}
	return out, nil
}

// JWTCheck is the token Envoy's jwt_authn filter verifies before the
// route acts on a request: the request's, against its provider. The
// simulator answers a request without a token itself (401); the data
// plane fetches the keys and calls Verify.
type JWTCheck struct {
	Provider  string   `json:"provider"`
	Issuer    string   `json:"issuer,omitempty"`
	Audiences []string `json:"audiences,omitempty"`
	// URI is where the JSON Web Key Set is fetched from, through
	// Server's cluster, waiting Timeout at most; Envoy keeps it for
	// CacheDuration.
	URI           string        `json:"uri"`
	Server        Backend       `json:"server"`
	Timeout       time.Duration `json:"timeout"`
	CacheDuration time.Duration `json:"cacheDuration"`
	// Forward keeps the token on the request; else Envoy removes the
	// header it came in.
	Forward bool   `json:"forward,omitempty"`
	Token   string `json:"-"`
	// realm is the request's URI, which Envoy's 401 names.
	realm string
}

// defaultJWKSCacheDuration is how long Envoy keeps a remote JWKS unless
// told otherwise.
const defaultJWKSCacheDuration = 5 * time.Minute

// jwtClockSkew is how far Envoy lets a token's times be off (its
// clock_skew_seconds default).
const jwtClockSkew = 60 * time.Second

// jwtOf is the verification a route's jwt_authn configuration asks for:
// nil when it names no requirement. A request without a token is answered
// 401 (missing is true).
func (s *Simulator) jwtOf(f *jwtFilter, vh *routev3.VirtualHost, rt *routev3.Route, r *httpRequest) (c *JWTCheck, missing bool, err error) {
	cfg := perFilterConfig(vh, rt, jwtAuthnFilterName)
	if cfg == nil {
		return nil, false, nil
	}
	if f == nil {
		return nil, false, fmt.Errorf("a JWT requirement for a jwt_authn filter the connection manager does not have: Envoy would ignore it")
	}
	pr, err := unpack[jwtv3.PerRouteConfig](cfg, "jwt_authn per route")
	if err != nil {
		return nil, false, err
	}
	if err := understand(pr, "requirement_name"); err != nil {
		return nil, false, err
	}
	provider, ok := f.requirements[pr.GetRequirementName()]
	if !ok {
		return nil, false, fmt.Errorf("jwt requirement %q is not in the filter's requirement_map: Envoy rejects the route configuration", pr.GetRequirementName())
	}
	p := f.providers[provider]
	uri := p.GetRemoteJwks().GetHttpUri()
	out := &JWTCheck{
		Provider: provider, Issuer: p.GetIssuer(), Audiences: p.GetAudiences(), Forward: p.GetForward(),
		URI: uri.GetUri(), Timeout: uri.GetTimeout().AsDuration(), CacheDuration: defaultJWKSCacheDuration,
		Server: Backend{Cluster: uri.GetCluster()},
		realm:  r.scheme + "://" + r.authority + strings.SplitN(r.path, "?", 2)[0],
	}
	if d := p.GetRemoteJwks().GetCacheDuration(); d != nil {
		out.CacheDuration = d.AsDuration()
	}
	if err := s.upstream(&out.Server, 503); err != nil {
		return nil, false, err
	}
	// Envoy's default places: the Authorization header's Bearer token,
	// then the access_token query parameter.
	for _, h := range r.headers {
		if h.Name == "authorization" && strings.HasPrefix(h.Value, "Bearer ") {
			out.Token = strings.TrimSpace(strings.TrimPrefix(h.Value, "Bearer "))
			break
		}
	}
	if out.Token == "" {
		out.Token = queryValue(r.path, "access_token")
	} else if !out.Forward {
		r.headers = slices.DeleteFunc(r.headers, func(h Header) bool { return h.Name == "authorization" })
	}
	return out, out.Token == "", nil
}

// KeysRequest is the request Envoy fetches the JWKS with: a GET of the
// URI.
func (c *JWTCheck) KeysRequest() *HTTPRequest {
	scheme, rest, _ := strings.Cut(c.URI, "://")
	authority, path, _ := strings.Cut(rest, "/")
	return &HTTPRequest{Method: "GET", Scheme: scheme, Authority: authority, Path: "/" + path}
}

// queryValue is the first value of a query parameter of path, "" without.
func queryValue(path, name string) string {
	_, q, _ := strings.Cut(path, "?")
	for kv := range strings.SplitSeq(q, "&") {
		if k, v, _ := strings.Cut(kv, "="); k == name {
			return v
		}
	}
	return ""
}

// JWT statuses, worded as Envoy's JWT library words them: the body of its
// answer.
const (
	jwtMissing         = "Jwt is missing"
	jwtBadFormat       = "Jwt is not in the form of Header.Payload.Signature with two dots and 3 sections"
	jwtBadHeader       = "Jwt header is an invalid JSON"
	jwtBadPayload      = "Jwt payload is an invalid JSON"
	jwtUnknownIssuer   = "Jwt issuer is not configured"
	jwtExpired         = "Jwt is expired"
	jwtNotYetValid     = "Jwt not yet valid"
	jwtAudience        = "Audiences in Jwt are not allowed"
	jwksFetchFailed    = "Jwks remote fetch is failed"
	jwksNoKey          = "Jwks doesn't have key to match kid or alg from Jwt"
	jwtVerifyFails     = "Jwt verification fails"
	invalidTokenString = `, error="invalid_token"`
)

// missingAnswer is Envoy's answer to a request without a token.
func (c *JWTCheck) missingAnswer() *Response {
	return &Response{Status: 401, Body: jwtMissing, Headers: []Header{{Name: "www-authenticate", Value: `Bearer realm="` + c.realm + `"`}}}
}

// Verify is Envoy's verdict on the token at now: nil lets the request
// through, else Envoy's answer. keys fetches the JWKS, as Envoy does once
// the token passes the checks that need none; an error is a failed fetch.
func (c *JWTCheck) Verify(now time.Time, keys func() ([]byte, error)) *Response {
	if msg := c.verify(now, keys); msg != "" {
		status := 401
		if msg == jwtAudience {
			status = 403
		}
		return &Response{Status: status, Body: msg, Headers: []Header{{Name: "www-authenticate", Value: `Bearer realm="` + c.realm + `"` + invalidTokenString}}}
	}
	return nil
}

// jwtAlgorithms are the algorithms Envoy verifies.
var jwtAlgorithms = []jose.SignatureAlgorithm{
	jose.ES256, jose.ES384, jose.ES512, jose.HS256, jose.HS384, jose.HS512,
	jose.RS256, jose.RS384, jose.RS512, jose.PS256, jose.PS384, jose.PS512, jose.EdDSA,
}

// verify checks as Envoy's authenticator does, in its order: the form,
// the issuer, the times, the audiences, then the signature with the
// fetched keys. It returns the failure, "" for none.
func (c *JWTCheck) verify(now time.Time, keys func() ([]byte, error)) string {
	parts := strings.Split(c.Token, ".")
	if len(parts) != 3 {
		return jwtBadFormat
	}
	var header struct {
		Alg string `json:"alg"`
		Kid string `json:"kid"`
	}
	var claims struct {
		Iss string          `json:"iss"`
		Aud json.RawMessage `json:"aud"`
		Exp *float64        `json:"exp"`
		Nbf *float64        `json:"nbf"`
	}
	if !decodeSegment(parts[0], &header) || header.Alg == "" {
		return jwtBadHeader
	}
	if !decodeSegment(parts[1], &claims) {
		return jwtBadPayload
	}
	if c.Issuer != "" && claims.Iss != c.Issuer {
		return jwtUnknownIssuer
	}
	if claims.Exp != nil && now.After(time.Unix(int64(*claims.Exp), 0).Add(jwtClockSkew)) {
		return jwtExpired
	}
	if claims.Nbf != nil && now.Add(jwtClockSkew).Before(time.Unix(int64(*claims.Nbf), 0)) {
		return jwtNotYetValid
	}
	if len(c.Audiences) > 0 {
		var auds []string
		var one string
		if json.Unmarshal(claims.Aud, &one) == nil {
			auds = []string{one}
		} else if json.Unmarshal(claims.Aud, &auds) != nil {
			auds = nil
		}
		if !slices.ContainsFunc(auds, func(a string) bool { return slices.Contains(c.Audiences, a) }) {
			return jwtAudience
		}
	}
	doc, err := keys()
	if err != nil {
		return jwksFetchFailed
	}
	var set jose.JSONWebKeySet
	if err := json.Unmarshal(doc, &set); err != nil || len(set.Keys) == 0 {
		return jwksFetchFailed
	}
	sig, err := jose.ParseSigned(c.Token, jwtAlgorithms)
	if err != nil {
		return jwtVerifyFails
	}
	matched := false
	for _, k := range set.Keys {
		if header.Kid != "" && k.KeyID != "" && k.KeyID != header.Kid || k.Algorithm != "" && k.Algorithm != header.Alg {
			continue
		}
		matched = true
		if _, err := sig.Verify(k.Key); err == nil {
			return ""
		}
	}
	if !matched {
		return jwksNoKey
	}
	return jwtVerifyFails
}

// decodeSegment decodes a token's base64url JSON segment into v.
func decodeSegment(seg string, v any) bool {
	b, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(seg, "="))
	return err == nil && json.Unmarshal(b, v) == nil
}
