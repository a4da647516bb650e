package offline

import (
	"strconv"
	"strings"
	"sync"
	"testing"

	"isobar.dev/api/ports"
	"isobar.dev/controller/pkg/envoysim"
)

// FuzzPathNormalization sends a path, as a client may spell it, to the
// Gateway of testdata/path-normalization.in.yaml, whose /admin routes
// carry their own backend (HTTPRoute, Ingress) or an ipAllowPolicy
// (HTTPProxy), and the same path as a backend reads it (normalized by
// reference below, written apart from the simulator). Following a
// redirect Envoy answers for escaped slashes, the two must meet the same
// route, backend and policy: no spelling of a path skips what its
// normalized form meets.
func FuzzPathNormalization(f *testing.F) {
	for _, p := range []string{"/admin", "//admin", "/%2Fadmin", "/x/../admin", `/x\..\admin`, "/%2e%2e/admin", "/./admin//x", "/adm%69n", "/%5cadmin", "/admin?x=//y", "/public", "/%00admin", "/admin%2F..%2F"} {
		f.Add(p)
	}
	sim := pathNormalizationGateway(f)
	f.Fuzz(func(t *testing.T, path string) {
		if !strings.HasPrefix(path, "/") || strings.ContainsAny(path, "#\x00\r\n") {
			return
		}
		for _, host := range []string{"routes.example.com", "office.example.com", "shop.example.com"} {
			raw, err := simulatePath(sim, host, path, 1)
			if err != nil {
				t.Fatalf("%s%s: %v", host, path, err)
			}
			if raw == "400" {
				continue // Envoy refuses the path
			}
			want, err := simulatePath(sim, host, referenceNormalized(path), 0)
			if err != nil {
				t.Fatalf("%s%s: %v", host, referenceNormalized(path), err)
			}
			if raw != want {
				t.Errorf("%s%s gets %s; its normalized path %s gets %s", host, path, raw, referenceNormalized(path), want)
			}
		}
	})
}

var (
	pathSimOnce sync.Once
	pathSim     *envoysim.Simulator
	pathSimErr  error
)

// pathNormalizationGateway is the simulated Envoy of the golden case's
// Gateway web, built once for every input.
func pathNormalizationGateway(f *testing.F) *envoysim.Simulator {
	pathSimOnce.Do(func() {
		res, _, err := LoadFiles([]string{"testdata/path-normalization.in.yaml"}, "")
		if err != nil {
			pathSimErr = err
			return
		}
		result, err := Translate(res, Options{})
		if err != nil {
			pathSimErr = err
			return
		}
		for i, g := range result.Gateways.Gateways {
			if g.Name == "default/web" {
				x := result.XDS[i]
				pathSim, pathSimErr = envoysim.New(x.Listeners, x.Routes, x.Clusters, x.Endpoints, x.Secrets)
			}
		}
	})
	if pathSimErr != nil || pathSim == nil {
		f.Fatalf("translating testdata/path-normalization.in.yaml: %v", pathSimErr)
	}
	return pathSim
}

// simulatePath is what a client at 192.0.2.1 (outside the HTTPProxy's
// allow list) gets for GET path: the route and backend, or Envoy's own
// status. It follows up to redirects of Envoy's own answers, as a client
// follows a 307.
func simulatePath(sim *envoysim.Simulator, host, path string, redirects int) (string, error) {
	req := envoysim.Request{Method: "GET", Scheme: "http", Authority: host, Path: path, ClientAddress: "192.0.2.1", Port: uint32(ports.ContainerPort(80))}
	a, err := sim.Simulate(req)
	if err != nil {
		return "", err
	}
	if r := a.Response; r != nil {
		if r.Status == 307 && redirects > 0 {
			for _, h := range r.Headers {
				if h.Name == "location" {
					return simulatePath(sim, host, h.Value, redirects-1)
				}
			}
		}
		return a.Route + " " + strconv.Itoa(r.Status), nil
	}
	if a.Upstream == nil {
		return a.Route + " no upstream", nil
	}
	return a.Route + " " + a.Upstream.Cluster, nil
}

// referenceNormalized is the path a backend that decodes escaped slashes
// and resolves dot segments reads: escaped slashes and backslashes become
// slashes, escaped unreserved characters are decoded, dot segments go and
// repeated slashes merge (RFC 3986 sections 2.3, 5.2.4); the query stays.
func referenceNormalized(target string) string {
	path, query, hasQuery := strings.Cut(target, "?")
	var b strings.Builder
	for i := 0; i < len(path); i++ {
		c := path[i]
		if c == '%' && i+2 < len(path) {
			if v, ok := unhexByte(path[i+1 : i+3]); ok {
				switch {
				case v == '/' || v == '\\':
					b.WriteByte('/')
					i += 2
					continue
				case 'a' <= v && v <= 'z' || 'A' <= v && v <= 'Z' || '0' <= v && v <= '9' || strings.IndexByte("-._~", v) >= 0:
					b.WriteByte(v)
					i += 2
					continue
				}
			}
		}
		if c == '\\' {
			c = '/'
		}
		b.WriteByte(c)
	}
	var out []string
	segs := strings.Split(b.String(), "/")
	for i, s := range segs {
		last := i == len(segs)-1
		switch {
		case s == "" && !last:
		case s == ".":
			if last {
				out = append(out, "")
			}
		case s == "..":
			if len(out) > 0 {
				out = out[:len(out)-1]
			}
			if last {
				out = append(out, "")
			}
		default:
			out = append(out, s)
		}
	}
	p := "/" + strings.Join(out, "/")
	if hasQuery {
		p += "?" + query
	}
	return p
}

func unhexByte(s string) (byte, bool) {
	var v byte
	for _, c := range []byte(s) {
		switch {
		case '0' <= c && c <= '9':
			v = v<<4 | (c - '0')
		case 'a' <= c && c <= 'f':
			v = v<<4 | (c - 'a' + 10)
		case 'A' <= c && c <= 'F':
			v = v<<4 | (c - 'A' + 10)
		default:
			return 0, false
		}
	}
	return v, true
}
