package dataplane

import (
	"io"
	"net/http"
	"strconv"
	"testing"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	jwtv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/jwt_authn/v3"
	routerv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"

	"isobar.dev/e2e/harness"
	"isobar.dev/e2e/jwks"
)

// Envoy verifies a route's required token before it forwards: against
// the key set it fetches over a real connection from the provider's URI
// through a DNS cluster, and keeps for the cache duration; a token that
// is missing, expired, of another issuer or audience, or signed by
// another key gets Envoy's own answer, and so does every token while the
// keys cannot be fetched. A verified token is removed from the request
// unless the provider forwards it.
func TestJWTVerification(t *testing.T) {
	issuer, err := jwks.NewIssuer("k1")
	if err != nil {
		t.Fatal(err)
	}
	stranger, err := jwks.NewIssuer("k1")
	if err != nil {
		t.Fatal(err)
	}
	keys := &jwks.Server{Doc: issuer.KeySet()}
	keyServer := backend(t, func(p *http.Protocols) { p.SetHTTP1(true) }, keys.ServeHTTP)
	be := backend(t, func(p *http.Protocols) { p.SetHTTP1(true) }, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Seen-Authorization", r.Header.Get("Authorization"))
	})
	down := harness.FreePort(t)

	provider := func(cluster string, port int, forward bool) *jwtv3.JwtProvider {
		return &jwtv3.JwtProvider{
			Issuer: "https://idp.example.com", Audiences: []string{"shop"}, Forward: forward,
			JwksSourceSpecifier: &jwtv3.JwtProvider_RemoteJwks{RemoteJwks: &jwtv3.RemoteJwks{
				HttpUri: &corev3.HttpUri{
					Uri:              "http://localhost:" + strconv.Itoa(port) + "/.well-known/jwks.json",
					HttpUpstreamType: &corev3.HttpUri_Cluster{Cluster: cluster},
					Timeout:          durationpb.New(2 * time.Second),
				},
				CacheDuration: durationpb.New(time.Hour),
			}},
		}
	}
	requirement := func(name string) *jwtv3.JwtRequirement {
		return &jwtv3.JwtRequirement{RequiresType: &jwtv3.JwtRequirement_ProviderName{ProviderName: name}}
	}
	route := func(prefix, requires string) *routev3.Route {
		r := &routev3.Route{Name: prefix, Match: &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: prefix}},
			Action: &routev3.Route_Route{Route: &routev3.RouteAction{ClusterSpecifier: &routev3.RouteAction_Cluster{Cluster: "backend"}}}}
		if requires != "" {
			r.TypedPerFilterConfig = map[string]*anypb.Any{"envoy.filters.http.jwt_authn": typed(t,
				&jwtv3.PerRouteConfig{RequirementSpecifier: &jwtv3.PerRouteConfig_RequirementName{RequirementName: requires}})}
		}
		return r
	}
	hcm := &hcmv3.HttpConnectionManager{
		StatPrefix: "test",
		RouteSpecifier: &hcmv3.HttpConnectionManager_RouteConfig{RouteConfig: &routev3.RouteConfiguration{
			Name: "test",
			VirtualHosts: []*routev3.VirtualHost{{Name: "all", Domains: []string{"*"}, Routes: []*routev3.Route{
				route("/verified", "idp"), route("/forwarded", "forwarding"), route("/down", "down"), route("/", ""),
			}}},
		}},
		HttpFilters: []*hcmv3.HttpFilter{{
			Name: "envoy.filters.http.jwt_authn",
			ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: typed(t, &jwtv3.JwtAuthentication{
				Providers: map[string]*jwtv3.JwtProvider{
					"idp": provider("jwks", keyServer.Port, false), "forwarding": provider("jwks", keyServer.Port, true),
					"down": provider("jwks-down", down, false),
				},
				RequirementMap: map[string]*jwtv3.JwtRequirement{"idp": requirement("idp"), "forwarding": requirement("forwarding"), "down": requirement("down")},
			})},
		}, {Name: "envoy.filters.http.router", ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: typed(t, &routerv3.Router{})}}},
	}
	port := harness.FreePort(t)
	l := hcmListener(t, "test", port, hcm)
	// The key servers by name, as a provider's URI names them: Envoy
	// resolves the host.
	dnsCluster := func(name string, port int) *clusterv3.Cluster {
		return &clusterv3.Cluster{
			Name:                 name,
			ClusterDiscoveryType: &clusterv3.Cluster_Type{Type: clusterv3.Cluster_STRICT_DNS},
			LoadAssignment: &endpointv3.ClusterLoadAssignment{ClusterName: name, Endpoints: []*endpointv3.LocalityLbEndpoints{{
				LbEndpoints: []*endpointv3.LbEndpoint{{HostIdentifier: &endpointv3.LbEndpoint_Endpoint{Endpoint: &endpointv3.Endpoint{
					Address: &corev3.Address{Address: &corev3.Address_SocketAddress{SocketAddress: &corev3.SocketAddress{
						Address: "localhost", PortSpecifier: &corev3.SocketAddress_PortValue{PortValue: uint32(port)}}}},
				}}}},
			}}},
		}
	}
	staticEnvoy(t, l, backendCluster(t, be, false), dnsCluster("jwks", keyServer.Port), dnsCluster("jwks-down", down))
	get(t, port, "/") // the listener is bound and the backend answers

	now := time.Now()
	token := func(i *jwks.Issuer, over map[string]any) string {
		claims := map[string]any{"iss": "https://idp.example.com", "aud": "shop", "sub": "alice", "exp": now.Add(time.Hour).Unix()}
		for k, v := range over {
			claims[k] = v
		}
		tok, err := i.Token(claims)
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	valid := token(issuer, nil)
	for _, tc := range []struct {
		name, path, token string
		status            int
		body, seen        string
	}{
		{name: "valid", path: "/verified", token: valid, status: 200},
		{name: "valid again, from the cached keys", path: "/verified", token: valid, status: 200},
		{name: "forwarded", path: "/forwarded", token: valid, status: 200, seen: "Bearer " + valid},
		{name: "missing", path: "/verified", status: 401, body: "Jwt is missing"},
		{name: "expired", path: "/verified", token: token(issuer, map[string]any{"exp": now.Add(-time.Hour).Unix()}), status: 401, body: "Jwt is expired"},
		{name: "another audience", path: "/verified", token: token(issuer, map[string]any{"aud": "blog"}), status: 403, body: "Audiences in Jwt are not allowed"},
		{name: "another issuer", path: "/verified", token: token(issuer, map[string]any{"iss": "https://evil.example.com"}), status: 401, body: "Jwt issuer is not configured"},
		{name: "another key", path: "/verified", token: token(stranger, nil), status: 401, body: "Jwt verification fails"},
		{name: "keys unreachable", path: "/down", token: valid, status: 401, body: "Jwks remote fetch is failed"},
		{name: "not required", path: "/", status: 200},
	} {
		req, err := http.NewRequest(http.MethodGet, "http://127.0.0.1:"+strconv.Itoa(port)+tc.path, nil)
		if err != nil {
			t.Fatal(err)
		}
		if tc.token != "" {
			req.Header.Set("Authorization", "Bearer "+tc.token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.status || tc.body != "" && string(body) != tc.body {
			t.Errorf("%s: %d %q, want %d %q", tc.name, resp.StatusCode, body, tc.status, tc.body)
		}
		if got := resp.Header.Get("Seen-Authorization"); tc.status == 200 && got != tc.seen {
			t.Errorf("%s: the backend got authorization %q, want %q", tc.name, got, tc.seen)
		}
		if tc.status != 200 && resp.Header.Get("Www-Authenticate") == "" {
			t.Errorf("%s: Envoy's answer has no WWW-Authenticate", tc.name)
		}
	}
	if n := keys.Fetches.Load(); n != 1 {
		t.Errorf("the key set was fetched %d times, want once (kept for an hour)", n)
	}
}
