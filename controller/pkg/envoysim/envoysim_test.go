package envoysim

import (
	"strings"
	"testing"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/cors/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/listener/tls_inspector/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/tcp_proxy/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/udp/udp_proxy/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"sigs.k8s.io/yaml"
)

// Hand-written configuration, not Isobar's: the simulator's semantics come
// from Envoy's documentation.
const listenersYAML = `
- name: http
  address: {socket_address: {address: 0.0.0.0, port_value: 8080}}
  filter_chains:
  - filters:
    - name: envoy.filters.network.http_connection_manager
      typed_config:
        '@type': type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager
        stat_prefix: http
        normalize_path: true
        strip_any_host_port: true
        rds: {route_config_name: main, config_source: {ads: {}}}
        http_filters:
        - name: envoy.filters.http.router
          typed_config: {'@type': type.googleapis.com/envoy.extensions.filters.http.router.v3.Router}
- name: tls
  address: {socket_address: {address: 0.0.0.0, port_value: 8443}}
  listener_filters:
  - name: envoy.filters.listener.tls_inspector
    typed_config: {'@type': type.googleapis.com/envoy.extensions.filters.listener.tls_inspector.v3.TlsInspector}
  filter_chains:
  - name: exact
    filter_chain_match: {server_names: [a.b.example.com], transport_protocol: tls}
    filters: [{name: envoy.filters.network.tcp_proxy, typed_config: {'@type': type.googleapis.com/envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy, stat_prefix: a, cluster: exact}}]
  - name: long-wildcard
    filter_chain_match: {server_names: ['*.b.example.com'], transport_protocol: tls}
    filters: [{name: envoy.filters.network.tcp_proxy, typed_config: {'@type': type.googleapis.com/envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy, stat_prefix: b, cluster: long}}]
  - name: short-wildcard
    filter_chain_match: {server_names: ['*.example.com'], transport_protocol: tls}
    filters: [{name: envoy.filters.network.tcp_proxy, typed_config: {'@type': type.googleapis.com/envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy, stat_prefix: c, cluster: short}}]
  - name: any-tls
    filter_chain_match: {transport_protocol: tls}
    filters: [{name: envoy.filters.network.tcp_proxy, typed_config: {'@type': type.googleapis.com/envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy, stat_prefix: d, weighted_clusters: {clusters: [{name: exact, weight: 1}, {name: long, weight: 3}]}}}]
- name: dns
  address: {socket_address: {address: 0.0.0.0, port_value: 5353, protocol: UDP}}
  listener_filters:
  - name: envoy.filters.udp_listener.udp_proxy
    typed_config:
      '@type': type.googleapis.com/envoy.extensions.filters.udp.udp_proxy.v3.UdpProxyConfig
      stat_prefix: dns
      matcher: {on_no_match: {action: {name: route, typed_config: {'@type': type.googleapis.com/envoy.extensions.filters.udp.udp_proxy.v3.Route, cluster: exact}}}}
`

const routesYAML = `
- name: main
  request_headers_to_add:
  - header: {key: x-level, value: config}
    append_action: OVERWRITE_IF_EXISTS_OR_ADD
  virtual_hosts:
  - name: any
    domains: ['*']
    routes: [{name: any, match: {prefix: /}, route: {cluster: exact}}]
  - name: suffix-short
    domains: ['*.example.com']
    routes: [{name: suffix-short, match: {prefix: /}, route: {cluster: short}}]
  - name: suffix-long
    domains: ['*.b.example.com']
    routes: [{name: suffix-long, match: {prefix: /}, route: {cluster: long}}]
  - name: prefix-wildcard
    domains: ['api.*']
    routes: [{name: prefix-wildcard, match: {prefix: /}, route: {cluster: short}}]
  - name: exact
    domains: [a.b.example.com]
    request_headers_to_add:
    - header: {key: x-level, value: vhost}
      append_action: OVERWRITE_IF_EXISTS_OR_ADD
    - header: {key: x-trail, value: vhost}
    response_headers_to_add:
    - header: {key: x-resp, value: vhost}
      append_action: ADD_IF_ABSENT
    routes:
    - name: separated
      match: {path_separated_prefix: /sep}
      route: {cluster: exact}
    - name: plain-prefix
      match: {prefix: /sep}
      route: {cluster: short}
    - name: regex-rewrite
      match: {safe_regex: {regex: '/v1/(\w+)/(.*)'}}
      route: {cluster: exact, regex_rewrite: {pattern: {regex: '^/v1/(\w+)/(.*)$'}, substitution: '/\2/\1'}}
    - name: prefix-rewrite
      match: {prefix: /old/, case_sensitive: false}
      route: {cluster: exact, prefix_rewrite: /new/, host_rewrite_literal: backend.internal}
    - name: headers
      match:
        path: /headers
        headers:
        - {name: x-env, string_match: {exact: prod}}
        - {name: x-debug, present_match: true, invert_match: true}
        query_parameters:
        - {name: v, string_match: {prefix: '2'}}
      request_headers_to_remove: [x-remove]
      request_headers_to_add:
      - header: {key: x-level, value: route}
        append_action: OVERWRITE_IF_EXISTS_OR_ADD
      - header: {key: x-trail, value: route}
      response_headers_to_add:
      - header: {key: x-resp, value: route}
        append_action: OVERWRITE_IF_EXISTS_OR_ADD
      route:
        weighted_clusters:
          clusters:
          - name: exact
            weight: 1
            request_headers_to_add:
            - header: {key: x-backend, value: exact}
          - name: missing
            weight: 1
    - name: redirect
      match: {prefix: /go/}
      redirect: {https_redirect: true, port_redirect: 8443, prefix_rewrite: /gone/, response_code: PERMANENT_REDIRECT, strip_query: true}
    - name: direct
      match: {path: /teapot}
      direct_response: {status: 418, body: {inline_string: short and stout}}
    - name: empty
      match: {path: /empty}
      route: {cluster: empty}
`

const clustersYAML = `
- {name: exact, type: EDS, eds_cluster_config: {service_name: exact, eds_config: {ads: {}}}}
- {name: long, type: EDS, eds_cluster_config: {eds_config: {ads: {}}}}
- {name: short, type: EDS, eds_cluster_config: {eds_config: {ads: {}}}}
- {name: empty, type: EDS, eds_cluster_config: {eds_config: {ads: {}}}}
`

const endpointsYAML = `
- cluster_name: exact
  endpoints: [{lb_endpoints: [{endpoint: {address: {socket_address: {address: 10.0.0.1, port_value: 80}}}}, {health_status: UNHEALTHY, endpoint: {address: {socket_address: {address: 10.0.0.9, port_value: 80}}}}]}]
- cluster_name: long
  endpoints: [{lb_endpoints: [{endpoint: {address: {socket_address: {address: 10.0.0.2, port_value: 80}}}}]}]
- cluster_name: short
  endpoints: [{lb_endpoints: [{endpoint: {address: {socket_address: {address: 10.0.0.3, port_value: 80}}}}]}]
- cluster_name: empty
`

func decode[T any, P interface {
	*T
	proto.Message
}](t *testing.T, doc string) []P {
	t.Helper()
	var raw []any
	if err := yaml.Unmarshal([]byte(doc), &raw); err != nil {
		t.Fatal(err)
	}
	var out []P
	for _, r := range raw {
		js, err := yaml.Marshal(r)
		if err == nil {
			js, err = yaml.YAMLToJSON(js)
		}
		if err != nil {
			t.Fatal(err)
		}
		m := P(new(T))
		if err := protojson.Unmarshal(js, m); err != nil {
			t.Fatalf("%s: %v", js, err)
		}
		out = append(out, m)
	}
	return out
}

func simulator(t *testing.T) *Simulator {
	t.Helper()
	s, err := New(decode[listenerv3.Listener](t, listenersYAML), decode[routev3.RouteConfiguration](t, routesYAML),
		decode[clusterv3.Cluster](t, clustersYAML), decode[endpointv3.ClusterLoadAssignment](t, endpointsYAML), []*tlsv3.Secret{})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func header(hs []Header, name string) []string {
	var out []string
	for _, h := range hs {
		if h.Name == name {
			out = append(out, h.Value)
		}
	}
	return out
}

func TestVirtualHostPrecedence(t *testing.T) {
	s := simulator(t)
	for host, want := range map[string]string{
		"a.b.example.com":      "exact",        // exact beats every wildcard
		"A.B.Example.COM:8080": "exact",        // case-insensitive, port stripped
		"x.b.example.com":      "suffix-long",  // the longer suffix wildcard
		"x.y.example.com":      "suffix-short", // wildcards span labels
		"example.com":          "any",          // a wildcard matches at least one character
		"api.other.org":        "prefix-wildcard",
		"elsewhere":            "any",
	} {
		a, err := s.Simulate(Request{Port: 8080, Authority: host, Path: "/"})
		if err != nil {
			t.Fatalf("%s: %v", host, err)
		}
		if a.VirtualHost != want {
			t.Errorf("host %s: virtual host %s, want %s", host, a.VirtualHost, want)
		}
	}
}

func TestRoutes(t *testing.T) {
	s := simulator(t)
	get := func(path string, headers ...Header) Request {
		return Request{Port: 8080, Authority: "a.b.example.com", Path: path, Headers: headers}
	}
	for _, tc := range []struct {
		name  string
		req   Request
		check func(t *testing.T, a *Answer)
	}{
		{"path_separated_prefix matches the segment", get("/sep/x"), route("separated")},
		{"path_separated_prefix matches itself with a query", get("/sep?q=1"), route("separated")},
		{"a plain prefix matches inside a segment", get("/separate"), route("plain-prefix")},
		{"regex rewrite with captures", get("/v1/users/42/profile?x=1"), func(t *testing.T, a *Answer) {
			route("regex-rewrite")(t, a)
			if p := a.Upstream.Request.Path; p != "/42/profile/users?x=1" {
				t.Errorf("upstream path %s, want /42/profile/users?x=1", p)
			}
			if o := header(a.Upstream.Request.Headers, "x-envoy-original-path"); len(o) != 1 || o[0] != "/v1/users/42/profile?x=1" {
				t.Errorf("x-envoy-original-path %v", o)
			}
		}},
		{"case-insensitive prefix rewrite and host rewrite", get("/OLD/thing"), func(t *testing.T, a *Answer) {
			route("prefix-rewrite")(t, a)
			if r := a.Upstream.Request; r.Path != "/new/thing" || r.Authority != "backend.internal" {
				t.Errorf("upstream %s %s, want backend.internal /new/thing", r.Authority, r.Path)
			}
		}},
		{"normalize_path removes dot segments before matching", get("/x/../sep/y"), route("separated")},
		{"header, presence and query matchers", get("/headers?v=2.1", Header{"X-Env", "prod"}, Header{"x-remove", "1"}, Header{"x-level", "client"}), func(t *testing.T, a *Answer) {
			route("headers")(t, a)
			if len(a.Backends) != 2 || a.Backends[1].Status != 503 || a.Backends[0].Endpoints[0] != "10.0.0.1:80" || len(a.Backends[0].Endpoints) != 1 {
				t.Fatalf("backends %+v: want exact (healthy endpoint only) and a 503 for the missing cluster", a.Backends)
			}
			h := a.Backends[0].Request.Headers
			// Overwrites: the least specific level writes last.
			if got := header(h, "x-level"); len(got) != 1 || got[0] != "config" {
				t.Errorf("x-level %v, want [config]", got)
			}
			// Appends: one line per level, most specific first.
			if got := header(h, "x-trail"); strings.Join(got, ",") != "route,vhost" {
				t.Errorf("x-trail %v, want [route vhost]", got)
			}
			if header(h, "x-remove") != nil || header(h, "x-backend")[0] != "exact" {
				t.Errorf("headers %v: want x-remove gone and x-backend set", h)
			}
			// Response: the route overwrote, the vhost only adds if absent.
			if got := header(a.Backends[0].ResponseHeaders, "x-resp"); len(got) != 1 || got[0] != "route" {
				t.Errorf("x-resp %v, want [route]", got)
			}
		}},
		{"the inverted presence matcher fails on the header", get("/headers?v=2", Header{"x-env", "prod"}, Header{"x-debug", "1"}), route("any-404")},
		{"the query matcher fails", get("/headers?v=3", Header{"x-env", "prod"}), route("any-404")},
		{"redirect", get("/go/there?secret=1"), func(t *testing.T, a *Answer) {
			route("redirect")(t, a)
			if a.Response.Status != 308 || header(a.Response.Headers, "location")[0] != "https://a.b.example.com:8443/gone/there" {
				t.Errorf("response %+v", a.Response)
			}
		}},
		{"direct response", get("/teapot"), func(t *testing.T, a *Answer) {
			if a.Response.Status != 418 || a.Response.Body != "short and stout" {
				t.Errorf("response %+v", a.Response)
			}
			// The local reply's own headers, then the virtual host's.
			if got := header(a.Response.Headers, "content-type"); len(got) != 1 || got[0] != "text/plain" {
				t.Errorf("content-type %q, want text/plain", got)
			}
			if got := header(a.Response.Headers, "content-length"); len(got) != 1 || got[0] != "15" {
				t.Errorf("content-length %q, want 15", got)
			}
			if got := header(a.Response.Headers, "x-resp"); len(got) != 1 || got[0] != "vhost" {
				t.Errorf("x-resp %q, want the virtual host's", got)
			}
		}},
		{"no endpoints: 503", get("/empty"), func(t *testing.T, a *Answer) {
			if a.Upstream.Status != 503 {
				t.Errorf("upstream %+v, want 503", a.Upstream)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, err := s.Simulate(tc.req)
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, a)
		})
	}
}

// route checks the matched route; "any-404" means no route of the virtual
// host matched.
func route(name string) func(*testing.T, *Answer) {
	return func(t *testing.T, a *Answer) {
		t.Helper()
		if name == "any-404" {
			if a.Response == nil || a.Response.Status != 404 {
				t.Errorf("route %s, want a 404", a.Route)
			}
			return
		}
		if a.Route != name {
			t.Errorf("route %q, want %q", a.Route, name)
		}
	}
}

func TestFilterChains(t *testing.T) {
	s := simulator(t)
	for _, tc := range []struct {
		sni, chain, cluster string
	}{
		{"a.b.example.com", "exact", "exact"},
		{"x.b.example.com", "long-wildcard", "long"},
		{"x.example.com", "short-wildcard", "short"},
		{"other.org", "any-tls", "exact"},
	} {
		a, err := s.Simulate(Request{Port: 8443, TLS: true, SNI: tc.sni})
		if err != nil {
			t.Fatal(err)
		}
		if a.FilterChain != tc.chain || a.Upstream.Cluster != tc.cluster {
			t.Errorf("SNI %s: chain %s to %s, want %s to %s", tc.sni, a.FilterChain, a.Upstream.Cluster, tc.chain, tc.cluster)
		}
	}
	// Weighted: seeds 0 and 1..3 fall into the 1 and 3 shares.
	for seed, want := range map[uint64]string{0: "exact", 1: "long", 3: "long", 4: "exact"} {
		a, err := s.Simulate(Request{Port: 8443, TLS: true, SNI: "other.org", Seed: seed})
		if err != nil {
			t.Fatal(err)
		}
		if a.Upstream.Cluster != want {
			t.Errorf("seed %d: %s, want %s", seed, a.Upstream.Cluster, want)
		}
	}
	if _, err := s.Simulate(Request{Port: 8443}); err == nil || !strings.Contains(err.Error(), "no filter chain matches") {
		t.Errorf("plain TCP to a TLS-only listener: %v, want no filter chain", err)
	}
	a, err := s.Simulate(Request{Port: 5353, UDP: true})
	if err != nil || a.Upstream.Cluster != "exact" {
		t.Errorf("UDP: %+v, %v", a, err)
	}
}

func TestRefusesWhatItDoesNotKnow(t *testing.T) {
	routes := strings.Replace(routesYAML, "match: {path: /teapot}", "match: {path: /teapot, runtime_fraction: {default_value: {numerator: 50}}}", 1)
	s, err := New(decode[listenerv3.Listener](t, listenersYAML), decode[routev3.RouteConfiguration](t, routes),
		decode[clusterv3.Cluster](t, clustersYAML), decode[endpointv3.ClusterLoadAssignment](t, endpointsYAML), nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.Simulate(Request{Port: 8080, Authority: "a.b.example.com", Path: "/teapot"})
	if err == nil || !strings.Contains(err.Error(), "envoy.config.route.v3.RouteMatch.runtime_fraction") {
		t.Errorf("error %v, want one naming RouteMatch.runtime_fraction", err)
	}
	if _, err := s.Simulate(Request{Port: 9999, Authority: "x"}); err == nil || !strings.Contains(err.Error(), "no listener") {
		t.Errorf("error %v, want no listener", err)
	}
}

// Custom header values: "%%" is a "%", %REQ(...)% a request header (its
// alternative, a length limit), %START_TIME% the request's start as
// Envoy formats it, other command operators beyond the simulator, a lone
// "%" an error.
func TestSubstitute(t *testing.T) {
	headers := []Header{{Name: "x-a", Value: "alpha"}, {Name: "x-b", Value: "beta"}}
	for _, tc := range []struct{ in, want, err string }{
		{"50%%", "50%", ""},
		{"%REQ(x-a)%-x", "alpha-x", ""},
		{"%REQ(X-A):3%", "alp", ""},
		{"%REQ(x-c?x-b)%", "beta", ""},
		{"%REQ(x-c)%", "", ""},
		{"%HOSTNAME%", "", "not simulated"},
		{"50%", "", "unterminated"},
		{"t=%START_TIME(%s.%3f)%", "t=1732838400.123", ""},
		{"%START_TIME(%Y-%m-%dT%H:%M:%S.%6f)%", "2024-11-29T00:00:00.123456", ""},
		{"%START_TIME%", "2024-11-29T00:00:00.123Z", ""},
		{"%START_TIME(%j)%", "", "not simulated"},
	} {
		got, err := substitute(tc.in, headers, streamInfo{start: time.Unix(1732838400, 123456789)})
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%q: err %v, want one saying %q", tc.in, err, tc.err)
		case tc.err == "" && (err != nil || got != tc.want):
			t.Errorf("%q = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
}
