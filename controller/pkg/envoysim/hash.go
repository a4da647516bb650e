package envoysim

import (
	"fmt"
	"hash/fnv"
	"math/bits"
	"slices"
	"strconv"
	"strings"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
)

// requestHash follows a route's hash policies as Envoy's HashPolicyImpl
// does: each input the request has is hashed and combined with what came
// before (rotated, so that two equal inputs do not cancel), up to a
// terminal policy that gave a hash. A cookie policy with a TTL whose
// cookie the request lacks makes Envoy set one (returned as setCookie),
// and the new value is hashed. nil when no policy gave a hash: a ring
// hash then picks any endpoint.
//
// The hash function is FNV-1a (mixed), not Envoy's xxHash: which endpoint a key
// lands on differs from Envoy's, that one key lands on one endpoint does
// not.
func requestHash(policies []*routev3.RouteAction_HashPolicy, r *httpRequest) (hash *uint64, setCookie *Header, err error) {
	for _, hp := range policies {
		if err := understand(hp, "header", "cookie", "connection_properties", "query_parameter", "terminal"); err != nil {
			return nil, nil, err
		}
		var input string
		var ok bool
		switch p := hp.GetPolicySpecifier().(type) {
		case *routev3.RouteAction_HashPolicy_Header_:
			if err := understand(p.Header, "header_name"); err != nil {
				return nil, nil, err
			}
			input, ok = r.headerValues(p.Header.GetHeaderName())
		case *routev3.RouteAction_HashPolicy_QueryParameter_:
			if err := understand(p.QueryParameter, "name"); err != nil {
				return nil, nil, err
			}
			input, ok = r.query(p.QueryParameter.GetName())
		case *routev3.RouteAction_HashPolicy_ConnectionProperties_:
			if err := understand(p.ConnectionProperties, "source_ip"); err != nil {
				return nil, nil, err
			}
			if p.ConnectionProperties.GetSourceIp() {
				if r.client.err != nil {
					return nil, nil, r.client.err
				}
				input, ok = r.client.peer.String(), true
			}
		case *routev3.RouteAction_HashPolicy_Cookie_:
			c := p.Cookie
			if err := understand(c, "name", "ttl", "path"); err != nil {
				return nil, nil, err
			}
			input, ok = r.cookie(c.GetName())
			if !ok && c.GetTtl() != nil {
				// Envoy makes the value from the client's address.
				if r.client.err != nil {
					return nil, nil, r.client.err
				}
				input, ok = strconv.FormatUint(fnv64(r.client.peer.String()), 16), true
				setCookie = &Header{Name: "set-cookie", Value: setCookieValue(c.GetName(), input, c.GetPath(), int64(c.GetTtl().AsDuration().Seconds()))}
			}
		default:
			return nil, nil, errUnsupportedf("hash policy %T", p)
		}
		if ok {
			h := fnv64(input)
			if hash != nil {
				h ^= bits.RotateLeft64(*hash, 1)
			}
			hash = &h
		}
		if hp.GetTerminal() && hash != nil {
			break
		}
	}
	return hash, setCookie, nil
}

// setCookieValue is the Set-Cookie header Envoy writes for a generated
// cookie: the value quoted, Max-Age unless the cookie is for the session,
// the path, HttpOnly.
func setCookieValue(name, value, path string, maxAge int64) string {
	v := name + `="` + value + `"`
	if maxAge != 0 {
		v += fmt.Sprintf("; Max-Age=%d", maxAge)
	}
	if path != "" {
		v += "; Path=" + path
	}
	return v + "; HttpOnly"
}

// cookie returns a cookie's value from the request's Cookie headers,
// without its quotes.
func (r *httpRequest) cookie(name string) (string, bool) {
	for _, h := range r.headers {
		if h.Name != "cookie" {
			continue
		}
		for _, c := range strings.Split(h.Value, ";") {
			k, v, found := strings.Cut(strings.TrimSpace(c), "=")
			if found && k == name {
				return strings.Trim(v, `"`), true
			}
		}
	}
	return "", false
}

// fnv64 is FNV-1a with MurmurHash3's finalizer, which spreads inputs
// that differ in a character over all the bits (FNV alone puts similar
// ring points next to each other).
func fnv64(s string) uint64 {
	f := fnv.New64a()
	f.Write([]byte(s))
	h := f.Sum64()
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	h *= 0xc4ceb9fe1a85ec53
	return h ^ h>>33
}

// ringReplicas is how many points of the ring each endpoint has.
const ringReplicas = 64

// ringPick is the endpoint a hash picks on a ring of the endpoints: the
// first point at or after the hash, wrapping. One hash picks one endpoint
// while the endpoints stay; when one comes or goes, only the hashes next
// to its points move, as with Envoy's ring hash.
func ringPick(endpoints []string, hash uint64) string {
	type point struct {
		at       uint64
		endpoint string
	}
	ring := make([]point, 0, len(endpoints)*ringReplicas)
	for _, e := range endpoints {
		for i := range ringReplicas {
			ring = append(ring, point{fnv64(e + "_" + strconv.Itoa(i)), e})
		}
	}
	if len(ring) == 0 {
		return ""
	}
	slices.SortFunc(ring, func(a, b point) int {
		if a.at != b.at {
			if a.at < b.at {
				return -1
			}
			return 1
		}
		return strings.Compare(a.endpoint, b.endpoint)
	})
	i, _ := slices.BinarySearchFunc(ring, hash, func(p point, h uint64) int {
		switch {
		case p.at < h:
			return -1
		case p.at > h:
			return 1
		}
		return 0
	})
	return ring[i%len(ring)].endpoint
}
