package offline

import (
	"cmp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"isobar.dev/api/ports"
	"isobar.dev/controller/pkg/envoysim"
)

// request is one request against a golden case's Gateway and what Envoy,
// simulated from the generated xDS alone, must do with it. Valid but wrong
// xDS (a route in the wrong order, a header on the wrong level) fails here
// even where it passes validation.
type request struct {
	gateway string // NAMESPACE/NAME; default default/web
	method  string
	url     string // http://host/path or https://host/path
	sni     string // the TLS server name, when not the URL's host
	headers []envoysim.Header
	seed    uint64

	route    string // the matched route's name; "" for none (404)
	status   int    // Envoy's own answer: direct response, redirect, 404
	cluster  string // the picked backend
	location string
	upstream map[string]string // headers (name -> value, "" for absent) or :path / :authority
	mirrors  []string
	// backendStatus is the answer Envoy gives for the picked backend
	// itself: 500 for an unresolved backendRef's share.
	backendStatus int
}

func TestGoldenRequests(t *testing.T) {
	h := func(kv ...string) []envoysim.Header {
		var out []envoysim.Header
		for i := 0; i < len(kv); i += 2 {
			out = append(out, envoysim.Header{Name: kv[i], Value: kv[i+1]})
		}
		return out
	}
	cases := map[string][]request{
		"basic-http": {
			{url: "http://app.example.com/api/users", route: "httproute/default/app/rule/0:api/match/0", cluster: "default/api/80"},
			{url: "http://app.example.com/apiary", route: "httproute/default/app/rule/1/match/0"},
			{url: "http://nowhere.example.org/", status: 404},
		},
		"precedence": {
			{url: "http://p.example.com/api", route: "httproute/default/old/rule/1/match/0"},
			{url: "http://p.example.com/v2/things", route: "httproute/default/old/rule/2/match/0"},
			{url: "http://p.example.com/api/v1/x", route: "httproute/default/old/rule/3/match/0"},
			{method: "POST", url: "http://p.example.com/api/x", route: "httproute/default/young/rule/3/match/0"},
			{url: "http://p.example.com/api/x", headers: h("x-version", "2", "x-canary", "yes"), route: "httproute/default/young/rule/2/match/0"},
			{url: "http://p.example.com/api/x", headers: h("x-version", "2", "x-canary", "maybe"), route: "httproute/default/old/rule/0/match/0"},
			{url: "http://p.example.com/api/x?debug=1", route: "httproute/default/young/rule/4/match/0"},
			{url: "http://p.example.com/api/x", route: "httproute/default/old/rule/0/match/0"},
			{url: "http://p.example.com/other", route: "httproute/default/young/rule/0/match/0"},
		},
		"isolation": {
			// A request for a more specific listener's hostname never
			// falls into the wildcard listener's routes.
			{gateway: "default/isolated", url: "http://x.foo.example.com/", status: 404},
			{gateway: "default/isolated", url: "http://a.foo.example.com/", route: "httproute/default/attaches-to-all/rule/0/match/0"},
			{gateway: "default/isolated", url: "http://zzz.example.com/", route: "httproute/default/wildcard-only/rule/0/match/0"},
			// Wildcard route hostnames that more specific listeners claim
			// whole do not reach the empty listener's routes.
			{gateway: "default/isolated", url: "http://zzz.example.com/empty", route: "httproute/default/wildcard-only/rule/0/match/0"},
			{gateway: "default/isolated", url: "http://b.foo.example.com/empty", status: 404},
			{gateway: "default/isolated", url: "http://x.org/empty", route: "httproute/default/wildcards-on-empty/rule/0/match/0"},
		},
		"filters": {
			{url: "http://f.example.com/moved", status: 308, location: "http://f.example.com:8443/elsewhere"},
			{url: "http://f.example.com/strip/deep/er?q=1", status: 302, location: "http://f.example.com/deep/er?q=1"},
			{url: "http://f.example.com/headers", headers: h("X-Remove", "1", "X-Add", "client"), route: "httproute/default/filters/rule/0/match/0",
				upstream: map[string]string{"x-set": "a", "x-add": "client,b", "x-remove": "", "x-pct": "50%"}},
			{url: "http://f.example.com/rewrite/x?y=1", upstream: map[string]string{":authority": "internal.example.com", ":path": "/v2/x?y=1"}},
			{url: "http://f.example.com/unprefix/a/b", upstream: map[string]string{":path": "/a/b"}},
			{url: "http://f.example.com/unprefix", upstream: map[string]string{":path": "/"}},
			{url: "http://f.example.com/full/any/thing", upstream: map[string]string{":path": "/index.html"}},
			{url: "http://f.example.com/mirror", cluster: "default/svc/80", mirrors: []string{"default/svc/80", "default/shadow/80"}},
			{url: "http://f.example.com/per-backend", cluster: "default/svc/80", upstream: map[string]string{"x-backend": "svc"}},
			{url: "http://e.example.com/", status: 500},
			{url: "http://f.example.com/set-host", status: 500},
			{url: "http://f.example.com/remove-host", status: 500},
		},
		"backends": {
			{url: "http://b.example.com/split", cluster: "default/svc/80"},
			{url: "http://b.example.com/split", seed: 95, cluster: "default/grpc/9000"},
			// The spec: an unresolved backendRef's share of traffic gets 500.
			{url: "http://b.example.com/partly-missing", seed: 0, cluster: "default/svc/80"},
			{url: "http://b.example.com/partly-missing", seed: 1, backendStatus: 500},
			{url: "http://b.example.com/granted", cluster: "other/shared/80"},
			{url: "http://b.example.com/not-granted", status: 500},
			{url: "http://b.example.com/wrong-kind", status: 500},
		},
		"grpc": {
			{method: "POST", url: "http://grpc.example.com/grpc.examples.echo.Echo/UnaryEcho", route: "grpcroute/default/echo/rule/0/match/0", cluster: "default/echo/9000/grpc"},
			{method: "POST", url: "http://grpc.example.com/grpc.health.v1.Health/Check", route: "grpcroute/default/echo/rule/2/match/1", upstream: map[string]string{"x-health": "1"}},
			{method: "POST", url: "http://grpc.example.com/other.Service/Check", route: "grpcroute/default/echo/rule/2/match/0"},
			{method: "POST", url: "http://grpc.example.com/grpc.examples.echo.Echo/Stream", headers: h("x-tenant", "a"), route: "grpcroute/default/echo/rule/1/match/0"},
			{method: "POST", url: "http://grpc.example.com/grpc.examples.echo.Echo/Stream", route: "grpcroute/default/echo/rule/4/match/0"},
		},
		"https-certificates": {
			{url: "https://app.bench.example.com/", route: "httproute/default/app/rule/0/match/0", cluster: "default/app/80"},
		},
		"backend-tls": {
			{url: "http://anything/public-admin/x", cluster: "default/public/8443"},
			{url: "http://anything/public/x", cluster: "default/public/443"},
			{url: "http://anything/secure", cluster: "default/secure/443"},
			{url: "http://anything/broken", status: 500},
		},
		"redirects": {
			{url: "http://r.example.com/host/x", status: 302, location: "http://new.example.com/host/x"},
			{url: "http://r.example.com:8080/host/x", status: 302, location: "http://new.example.com:8080/host/x"},
			{url: "http://r.example.com:8080/secure", status: 302, location: "https://r.example.com/secure"},
			{url: "http://r.example.com:8080/explicit", status: 302, location: "http://r.example.com/explicit"},
			{url: "http://r.example.com/other-port", status: 302, location: "http://r.example.com:9090/other-port"},
		},
		"kind-conflicts": {
			{url: "http://a.example.com/", route: "httproute/default/old-http/rule/0/match/0", cluster: "default/svc/80"},
			{url: "http://a.example.com/other/x", route: "httproute/default/same-kind/rule/0/match/0"},
			{method: "POST", url: "http://b.example.com/pkg.Svc/Method", route: "grpcroute/default/old-grpc/rule/0/match/0", cluster: "default/grpc/9000/grpc"},
			{url: "http://c.example.com/", status: 404},
		},
		// The conformance test HTTPSListenerDetectMisdirectedRequests: the
		// SNI picks the listener, a Host of another listener's gets 421.
		"misdirected": {
			{sni: "example.org", url: "https://example.org/", route: "httproute/default/catch-all/rule/0/match/0"},
			{sni: "example.org", url: "https://second-example.org/", status: 421},
			{sni: "example.org", url: "https://unknown-example.org/", status: 404},
			{sni: "example.org", url: "https://x.wildcard.org/", status: 421},
			{sni: "second-example.org", url: "https://second-example.org/", route: "httproute/default/second/rule/0/match/0"},
			{sni: "second-example.org", url: "https://example.org/", status: 421},
			{sni: "second-example.org", url: "https://unknown-example.org/", status: 421},
			{sni: "third.wildcard.org", url: "https://third.wildcard.org/", route: "httproute/default/wildcard/rule/0/match/0"},
			{sni: "third.wildcard.org", url: "https://fifth.wildcard.org/", route: "httproute/default/wildcard/rule/0/match/0"},
			{sni: "third.wildcard.org", url: "https://fourth.wildcard.org/", status: 421},
			{sni: "third.wildcard.org", url: "https://second-example.org/", status: 421},
			{sni: "fourth.wildcard.org", url: "https://fourth.wildcard.org/", route: "httproute/default/fourth/rule/0/match/0"},
			{sni: "fourth.wildcard.org", url: "https://fifth.wildcard.org/", status: 421},
			{sni: "unknown-example.org", url: "https://example.org/", route: "httproute/default/catch-all/rule/0/match/0"},
			{sni: "unknown-example.org", url: "https://unknown-example.org/", status: 404},
		},
		"ingress": {
			// force-ssl-redirect: HTTP requests for the TLS host go to
			// HTTPS, unless a more specific match serves them.
			{url: "http://shop.example.com/", status: 301, location: "https://shop.example.com/"},
			{url: "https://shop.example.com/cart/items", route: "httproute/default/ingress:shop:0/rule/0/match/0", cluster: "default/cart/8080"},
			{url: "https://shop.example.com/cartoon", route: "httproute/default/ingress:shop:0/rule/2/match/0", cluster: "default/app/80"},
			{url: "https://shop.example.com/health", route: "httproute/default/ingress:shop:0/rule/1/match/0", cluster: "default/app/80"},
			// An HTTPRoute with the same match ranks before the Ingress.
			{url: "http://shop.example.com/health", route: "httproute/default/health/rule/0/match/0", cluster: "default/cart/8080"},
			// On HTTP the TLS host's own rules are behind the redirect;
			// another Ingress's rule for the host is served there.
			{url: "http://shop.example.com/cart", route: "httproute/team/ingress:late:0/rule/0/match/0", cluster: "team/late/80"},
			// Two Ingresses, one match: the older's.
			{url: "http://a.blog.example.com/any", route: "httproute/default/ingress:shop:1/rule/0/match/0", cluster: "default/app/80"},
			// The default backend takes what no rule does.
			{url: "http://other.example.com/x", route: "httproute/default/ingress:shop:2/rule/0/match/0", cluster: "default/app/80"},
			// An Ingress of a Gateway without the shape is not served.
			{gateway: "default/plain", url: "http://any.example.com:8080/", status: 404},
			// A port name the Service lacks: 500, and an Event.
			{url: "http://late.example.com/", status: 500},
			// The Gateway's own certificate serves other names; a host
			// that is another listener's gets 421 there.
			{sni: "unknown.example.com", url: "https://shop.example.com/cart", status: 421},
		},
		"listenersets": {
			{gateway: "default/shared", url: "http://www.example.com/", route: "httproute/default/site/rule/0/match/0"},
			{gateway: "default/shared", url: "http://api.example.com/v1/x", route: "httproute/team-a/api/rule/0/match/0"},
			{gateway: "default/shared", url: "http://api.example.com/", status: 404},
			{gateway: "default/shared", url: "https://api.example.com:8443/v1/x", route: "httproute/team-a/api/rule/0/match/0"},
		},
		"attachment": {
			{gateway: "infra/shared", url: "http://same.example.com/", route: "httproute/infra/same-ns/rule/0/match/0"},
		},
	}
	for name, reqs := range cases {
		t.Run(name, func(t *testing.T) {
			res, _, err := LoadFiles([]string{"testdata/" + name + ".in.yaml"}, "")
			if err != nil {
				t.Fatal(err)
			}
			result, err := Translate(res, Options{})
			if err != nil {
				t.Fatal(err)
			}
			sims := map[string]*envoysim.Simulator{}
			for i, g := range result.Gateways.Gateways {
				x := result.XDS[i]
				if sims[g.Name], err = envoysim.New(x.Listeners, x.Routes, x.Clusters, x.Endpoints, x.Secrets); err != nil {
					t.Fatal(err)
				}
			}
			for _, r := range reqs {
				check(t, sims, r)
			}
		})
	}
}

func check(t *testing.T, sims map[string]*envoysim.Simulator, r request) {
	t.Helper()
	gw := cmp.Or(r.gateway, "default/web")
	sim := sims[gw]
	if sim == nil {
		t.Fatalf("no Gateway %s translated", gw)
	}
	scheme, rest, _ := strings.Cut(r.url, "://")
	host, path, _ := strings.Cut(rest, "/")
	port := int32(80)
	if h, p, ok := strings.Cut(host, ":"); ok {
		n, err := strconv.Atoi(p)
		if err != nil {
			t.Fatal(err)
		}
		host, port = h, int32(n)
	}
	req := envoysim.Request{Method: r.method, Scheme: scheme, Authority: host, Path: "/" + path, Headers: r.headers, Seed: r.seed}
	if scheme == "https" {
		if port == 80 {
			port = 443
		}
		req.TLS, req.SNI = true, cmp.Or(r.sni, host)
	}
	req.Port = uint32(ports.ContainerPort(port))
	what := r.method + " " + r.url
	a, err := sim.Simulate(req)
	if err != nil {
		t.Errorf("%s: %v", what, err)
		return
	}
	if r.route != "" && a.Route != r.route {
		t.Errorf("%s: route %q, want %q", what, a.Route, r.route)
	}
	if r.status != 0 {
		if a.Response == nil || a.Response.Status != r.status {
			t.Errorf("%s: Envoy answers %+v, want status %d", what, a.Response, r.status)
		}
		if r.location != "" && (a.Response == nil || !slices.Contains(a.Response.Headers, envoysim.Header{Name: "location", Value: r.location})) {
			t.Errorf("%s: response %+v, want location %s", what, a.Response, r.location)
		}
		return
	}
	if a.Upstream == nil {
		t.Errorf("%s: not forwarded (%+v)", what, a.Response)
		return
	}
	if r.backendStatus != 0 {
		if a.Upstream.Status != r.backendStatus {
			t.Errorf("%s: backend %s answered %d, want %d", what, a.Upstream.Cluster, a.Upstream.Status, r.backendStatus)
		}
		return
	}
	if r.cluster != "" && a.Upstream.Cluster != r.cluster {
		t.Errorf("%s: cluster %s, want %s", what, a.Upstream.Cluster, r.cluster)
	}
	// The golden inputs mostly have no EndpointSlices, so Envoy would
	// answer 503; the request it would forward is still checked.
	if a.Upstream.Request == nil {
		t.Errorf("%s: backend %s has no request", what, a.Upstream.Cluster)
		return
	}
	up := a.Upstream.Request
	for name, want := range r.upstream {
		var got string
		switch name {
		case ":path":
			got = up.Path
		case ":authority":
			got = up.Authority
		default:
			var vals []string
			for _, hd := range up.Headers {
				if hd.Name == name {
					vals = append(vals, hd.Value)
				}
			}
			got = strings.Join(vals, ",")
		}
		if got != want {
			t.Errorf("%s: upstream %s = %q, want %q", what, name, got, want)
		}
	}
	var mirrors []string
	for _, m := range a.Mirrors {
		mirrors = append(mirrors, m.Cluster)
	}
	if r.mirrors != nil && !slices.Equal(mirrors, r.mirrors) {
		t.Errorf("%s: mirrors %v, want %v", what, mirrors, r.mirrors)
	}
}
