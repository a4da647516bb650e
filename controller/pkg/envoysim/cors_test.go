package envoysim

import (
	"slices"
	"testing"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
)

// A hand-written CORS setup, after Envoy's CORS filter documentation: the
// virtual host's policy is the fallback for each setting the route's
// policy leaves empty.
const corsListenerYAML = `
- name: http
  address: {socket_address: {address: 0.0.0.0, port_value: 8080}}
  filter_chains:
  - filters:
    - name: envoy.filters.network.http_connection_manager
      typed_config:
        '@type': type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager
        stat_prefix: http
        rds: {route_config_name: main, config_source: {ads: {}}}
        http_filters:
        - name: envoy.filters.http.cors
          typed_config: {'@type': type.googleapis.com/envoy.extensions.filters.http.cors.v3.Cors}
        - name: envoy.filters.http.router
          typed_config: {'@type': type.googleapis.com/envoy.extensions.filters.http.router.v3.Router}
`

const corsRoutesYAML = `
- name: main
  virtual_hosts:
  - name: cors
    domains: ['*']
    typed_per_filter_config:
      envoy.filters.http.cors:
        '@type': type.googleapis.com/envoy.extensions.filters.http.cors.v3.CorsPolicy
        allow_origin_string_match: [{exact: 'https://vhost.example'}]
        allow_methods: GET
        max_age: '60'
    routes:
    - name: strict
      match: {prefix: /strict}
      route: {cluster: app}
      typed_per_filter_config:
        envoy.filters.http.cors:
          '@type': type.googleapis.com/envoy.extensions.filters.http.cors.v3.CorsPolicy
          allow_origin_string_match: [{exact: 'https://www.foo.com'}, {suffix: '.bar.com'}]
          allow_headers: x-a, x-b
          expose_headers: x-c
          allow_credentials: true
          forward_not_matching_preflights: false
    - name: wildcard
      match: {prefix: /wildcard}
      route: {cluster: app}
      typed_per_filter_config:
        envoy.filters.http.cors:
          '@type': type.googleapis.com/envoy.extensions.filters.http.cors.v3.CorsPolicy
          allow_origin_string_match: [{exact: '*'}]
          allow_methods: '*'
          allow_headers: '*'
    - name: teapot
      match: {prefix: /teapot}
      direct_response: {status: 418}
    - name: vhost-only
      match: {prefix: /}
      route: {cluster: app}
`

func TestCORS(t *testing.T) {
	s, err := New(decode[listenerv3.Listener](t, corsListenerYAML), decode[routev3.RouteConfiguration](t, corsRoutesYAML),
		decode[clusterv3.Cluster](t, `[{name: app, type: EDS, eds_cluster_config: {eds_config: {ads: {}}}}]`),
		decode[endpointv3.ClusterLoadAssignment](t, `[{cluster_name: app, endpoints: [{lb_endpoints: [{endpoint: {address: {socket_address: {address: 10.0.0.1, port_value: 80}}}}]}]}]`),
		[]*tlsv3.Secret{})
	if err != nil {
		t.Fatal(err)
	}
	req := func(method, path, origin string, headers ...Header) Request {
		if origin != "" {
			headers = append(headers, Header{Name: "Origin", Value: origin})
		}
		return Request{Port: 8080, Authority: "example.com", Method: method, Path: path, Headers: headers}
	}
	preflight := func(path, origin string, headers ...Header) Request {
		return req("OPTIONS", path, origin, append(headers, Header{Name: "Access-Control-Request-Method", Value: "PUT"})...)
	}
	type want map[string]string // header → value; "" means absent
	for _, tc := range []struct {
		name string
		req  Request
		// answered is set when the filter (or the route) answers, not a
		// backend.
		answered bool
		status   int
		headers  want
	}{
		{"preflight from an allowed origin is answered with both policies' settings", preflight("/strict", "https://www.foo.com"), true, 200, want{
			"access-control-allow-origin": "https://www.foo.com", "access-control-allow-credentials": "true",
			"access-control-allow-methods": "GET", "access-control-allow-headers": "x-a, x-b",
			"access-control-max-age": "60", "access-control-expose-headers": "x-c",
		}},
		{"the origin is matched by the route's matchers", preflight("/strict", "https://x.bar.com"), true, 200, want{
			"access-control-allow-origin": "https://x.bar.com",
		}},
		{"a refused preflight is answered without CORS headers when the policy does not forward it", preflight("/strict", "https://evil.example"), true, 200, want{
			"access-control-allow-origin": "", "access-control-allow-credentials": "true", "access-control-allow-methods": "GET",
		}},
		{"a refused preflight is forwarded by default", preflight("/other", "https://evil.example"), false, 0, want{
			"access-control-allow-origin": "",
		}},
		{"a matcher of '*' allows any origin; '*' methods and headers echo the request", preflight("/wildcard", "https://any.example:123", Header{Name: "Access-Control-Request-Headers", Value: "x-q"}), true, 200, want{
			"access-control-allow-origin": "https://any.example:123", "access-control-allow-methods": "PUT",
			"access-control-allow-headers": "x-q", "access-control-allow-credentials": "",
		}},
		{"a simple request gets the response headers from the backend's answer", req("GET", "/strict", "https://www.foo.com"), false, 0, want{
			"access-control-allow-origin": "https://www.foo.com", "access-control-allow-credentials": "true",
			"access-control-expose-headers": "x-c", "access-control-allow-methods": "",
		}},
		{"OPTIONS without Access-Control-Request-Method is a simple request", req("OPTIONS", "/strict", "https://www.foo.com"), false, 0, want{
			"access-control-allow-origin": "https://www.foo.com",
		}},
		{"a request without an Origin is not touched", req("GET", "/strict", ""), false, 0, want{
			"access-control-allow-origin": "",
		}},
		{"answers Envoy makes itself get the headers too", req("GET", "/teapot", "https://vhost.example"), true, 418, want{
			"access-control-allow-origin": "https://vhost.example",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, err := s.Simulate(tc.req)
			if err != nil {
				t.Fatal(err)
			}
			if !a.CORS {
				t.Errorf("the answer does not say CORS applied")
			}
			var got []Header
			switch {
			case tc.answered && a.Response == nil:
				t.Fatalf("forwarded to %v, want an answer from Envoy", a.Backends)
			case tc.answered:
				if a.Response.Status != tc.status {
					t.Errorf("status %d, want %d", a.Response.Status, tc.status)
				}
				got = a.Response.Headers
			case a.Response != nil || a.Upstream == nil:
				t.Fatalf("answered %+v, want the request forwarded", a.Response)
			default:
				got = a.Upstream.ResponseHeaders
			}
			for name, v := range tc.headers {
				var wantVals []string
				if v != "" {
					wantVals = []string{v}
				}
				if vals := header(got, name); !slices.Equal(vals, wantVals) {
					t.Errorf("%s: %q, want %q (all: %v)", name, vals, wantVals, got)
				}
			}
		})
	}
}
