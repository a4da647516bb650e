package xds

import (
	"slices"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
)

// vtMessage is the fast marshalling go-control-plane generates for its
// messages (vtprotobuf), compiled in with the vtprotobuf build tag, which
// the Makefile and the Dockerfiles set. Without the tag a route is sized and
// marshalled by reflection, to an encoding of the same message (a oneof's
// field lands elsewhere: the bytes differ, and either build gives the same
// bytes every time). Reflection is the slower: it walks each message's
// descriptor where the generated code writes fields directly.
type vtMessage interface {
	SizeVT() int
	MarshalToSizedBufferVTStrict([]byte) (int, error)
}

// fastMarshal returns m's generated marshalling when the build has it and
// it gives the same bytes every time. vtprotobuf writes a map's entries in
// Go's random order, which would change a route's bytes from one
// translation to the next; the only map a route of ours has is its
// per-filter configuration, of one entry (CORS).
func fastMarshal(m *routev3.Route) (vtMessage, bool) {
	vt, ok := any(m).(vtMessage)
	return vt, ok && len(m.TypedPerFilterConfig) <= 1
}

// routeSize is m's encoded size.
func routeSize(m *routev3.Route) int {
	if vt, ok := fastMarshal(m); ok {
		return vt.SizeVT()
	}
	return sized.Size(m)
}

// appendRoute appends m's encoding, of size bytes (routeSize), to out.
func appendRoute(out []byte, m *routev3.Route, size int) ([]byte, error) {
	vt, ok := fastMarshal(m)
	if !ok {
		return sized.MarshalAppend(out, m)
	}
	start := len(out)
	out = slices.Grow(out, size)[:start+size]
	if _, err := vt.MarshalToSizedBufferVTStrict(out[start:]); err != nil {
		return nil, err
	}
	return out, nil
}
