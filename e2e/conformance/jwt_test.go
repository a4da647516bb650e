package conformance

import (
	"context"
	"net"
	"net/http"
	"slices"
	"testing"
	"time"

	contourv1 "github.com/projectcontour/contour/apis/projectcontour/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"isobar.dev/e2e/jwks"
	"isobar.dev/e2e/rig"
)

// HTTPProxy JWT verification through a provisioned fleet: the fleet's
// Envoy fetches the provider's key set from a JWKS endpoint running as a
// Pod, by the Service's DNS name in the provider's URI, and verifies each
// request's token with it. A valid token reaches the echo Pod (without
// the token, which the provider does not forward); a missing or expired
// token gets 401 and another audience 403 from Envoy; a route that
// disables verification is not verified; a provider whose keys cannot be
// fetched (a Service without Pods) fails closed; a URI of another scheme
// is an error on the proxy's status.
func TestHTTPProxyJWTThroughFleet(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster")
	}
	r := rig.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	const ns, class = "jwt-proxies", "isobar-jwt"
	issuer, err := jwks.NewIssuer("fleet")
	if err != nil {
		t.Fatal(err)
	}
	root := func(name, uri string, routes []contourv1.Route) *contourv1.HTTPProxy {
		return &contourv1.HTTPProxy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: contourv1.HTTPProxySpec{
			IngressClassName: class, Routes: routes,
			VirtualHost: &contourv1.VirtualHost{Fqdn: name + ".example.com", TLS: &contourv1.TLS{SecretName: "example-tls"},
				JWTProviders: []contourv1.JWTProvider{{
					Name: "idp", Default: true, Issuer: "https://idp.example.com", Audiences: []string{"shop"},
					RemoteJWKS: contourv1.RemoteJWKS{URI: uri, Timeout: "2s"},
				}}},
		}}
	}
	objects := slices.Concat(tlsGateway(t, ns, class),
		// The JWKS endpoint, and a Service without Pods.
		serverWorkload(ns, "jwks", rig.JWKSImage, "http", 8080, corev1.EnvVar{Name: "JWKS", Value: string(issuer.KeySet())}),
		[]client.Object{podlessService(ns, "nobody", "http", 8080),
			root("shop", "http://jwks."+ns+".svc.cluster.local:8080/.well-known/jwks.json", []contourv1.Route{
				{Services: echo()},
				{Conditions: []contourv1.MatchCondition{{Prefix: "/public"}}, Services: echo(), JWTVerificationPolicy: &contourv1.JWTVerificationPolicy{Disabled: true}},
			}),
			root("down", "http://nobody."+ns+".svc.cluster.local:8080/jwks.json", []contourv1.Route{{Services: echo()}}),
			root("scheme", "ftp://jwks."+ns+".svc.cluster.local/jwks.json", []contourv1.Route{{Services: echo()}}),
		}, echoWorkload(ns, 1))
	for _, o := range objects {
		if err := r.Env.Client.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	address := gatewayAddress(t, ctx, r, types.NamespacedName{Namespace: ns, Name: "web"})
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		t.Fatal(err)
	}
	address = net.JoinHostPort(host, "443")
	now := time.Now()
	token := func(over map[string]any) string {
		claims := map[string]any{"iss": "https://idp.example.com", "aud": "shop", "sub": "alice", "exp": now.Add(time.Hour).Unix()}
		for k, v := range over {
			claims[k] = v
		}
		tok, err := issuer.Token(claims)
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	valid := token(nil)
	get := func(host, path, token string) echoed {
		return tlsGet(ctx, address, host+".example.com", path, token)
	}

	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(500 * time.Millisecond) {
		got := get("shop", "/", valid)
		if got.status == http.StatusOK && got.Pod != "" {
			break
		}
		if time.Now().After(deadline) {
			p := &contourv1.HTTPProxy{}
			_ = r.Env.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: "shop"}, p)
			t.Fatalf("GET https://shop.example.com/ with a valid token: %d %q from %q in two minutes, want 200 from an echo Pod; the proxy's status: %+v", got.status, got.body, got.Pod, p.Status)
		}
	}
	for _, tc := range []struct {
		name, host, path, token string
		status                  int
		reached                 bool
		body                    string
	}{
		{name: "valid", host: "shop", path: "/", token: valid, status: 200, reached: true},
		{name: "missing", host: "shop", path: "/", status: 401, body: "Jwt is missing"},
		{name: "expired", host: "shop", path: "/", token: token(map[string]any{"exp": now.Add(-time.Hour).Unix()}), status: 401, body: "Jwt is expired"},
		{name: "another audience", host: "shop", path: "/", token: token(map[string]any{"aud": "blog"}), status: 403, body: "Audiences in Jwt are not allowed"},
		{name: "not required", host: "shop", path: "/public", status: 200, reached: true},
		{name: "keys unreachable", host: "down", path: "/", token: valid, status: 401, body: "Jwks remote fetch is failed"},
	} {
		got := get(tc.host, tc.path, tc.token)
		what := tc.name + ": GET https://" + tc.host + ".example.com" + tc.path
		if got.status != tc.status || (got.Pod != "") != tc.reached {
			t.Errorf("%s: %d %q from %q, want %d (from an echo Pod: %v)", what, got.status, got.body, got.Pod, tc.status, tc.reached)
			continue
		}
		if tc.body != "" && got.body != tc.body {
			t.Errorf("%s: body %q, want Envoy's %q", what, got.body, tc.body)
		}
		if tc.reached && tc.token != "" && len(got.Headers["Authorization"]) > 0 {
			t.Errorf("%s: the backend got the token %q, which the provider does not forward", what, got.Headers["Authorization"])
		}
	}

	// Status: a URI of another scheme is the proxy's error.
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(500 * time.Millisecond) {
		p := &contourv1.HTTPProxy{}
		if err := r.Env.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: "scheme"}, p); err != nil {
			t.Fatal(err)
		}
		var errs []contourv1.SubCondition
		if len(p.Status.Conditions) == 1 {
			errs = p.Status.Conditions[0].Errors
		}
		if len(errs) == 1 && errs[0].Reason == "RemoteJWKSSchemeInvalid" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("in a minute: HTTPProxy scheme errors %+v, want RemoteJWKSSchemeInvalid", errs)
		}
	}
}
