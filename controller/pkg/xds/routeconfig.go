package xds

import (
	"fmt"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	"reflect"
	"slices"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"isobar.dev/controller/pkg/ir"
)

// Field numbers of the encodings routeConfiguration writes and reads back.
const (
	virtualHostsField protowire.Number = 2 // RouteConfiguration.virtual_hosts
	routesField       protowire.Number = 3 // VirtualHost.routes
)

// sized marshals a message whose size was just computed with it, without
// computing it again.
var sized = proto.MarshalOptions{Deterministic: true, UseCachedSize: true}

// builtRouteConfig is a route configuration as built last, with what it
// was built of.
type builtRouteConfig struct {
	vhosts []*ir.VirtualHost
	rc     *routev3.RouteConfiguration
	// encoded are the encodings of vhosts, in their order: slices of
	// rc's unknown fields.
	encoded [][]byte
}

// routeConfiguration translates a route table, adding it to b, into a
// route configuration whose virtual hosts are already encoded: they are
// the message's unknown fields, which marshal as they are and which Envoy
// reads as the virtual_hosts they are on the wire. Envoy messages for the
// routes exist only while a virtual host is encoded: a virtual host the
// IR's changes do not name keeps its bytes, and one they name takes its
// unchanged routes' bytes from its previous encoding, so a change to one
// route of 20,000 costs that route and a copy. Keeping the messages as
// well would hold every route twice (the messages and their bytes).
//
// A table the changes do not name gives the message built before, so
// that comparing it with what is served is a pointer check.
func (x *Translator) routeConfiguration(t *ir.RouteTable, before, b *builtListener) error {
	old := before.routeConfigs[t.Name]
	if old != nil && x.changes.KeepsRouteTable(t.Name) {
		b.routeConfigs[t.Name], b.routes = old, append(b.routes, old.rc)
		return nil
	}
	if old == nil {
		old = &builtRouteConfig{}
	}
	encoded := make([][]byte, len(t.VirtualHosts))
	// A virtual host is in its place unless one was added or removed
	// before it: it is looked up by position, and by a map only when it
	// moved (with 100,000 of them, a map rebuilt on every change cost
	// more than the rest of the change).
	var byName map[string]int
	previous := func(i int, name string) int {
		if i < len(old.vhosts) && old.vhosts[i].Name == name {
			return i
		}
		if byName == nil {
			byName = make(map[string]int, len(old.vhosts))
			for k, ov := range old.vhosts {
				byName[ov.Name] = k
			}
		}
		if k, ok := byName[name]; ok {
			return k
		}
		return -1
	}
	for i, v := range t.VirtualHosts {
		var err error
		switch j := previous(i, v.Name); {
		case j < 0:
			encoded[i], err = x.virtualHost(v, nil, nil)
		case x.changes.KeepsVirtualHost(t.Name, v.Name):
			encoded[i] = old.encoded[j]
		default:
			encoded[i], err = x.virtualHost(v, old.vhosts[j], old.encoded[j])
		}
		if err != nil {
			return fmt.Errorf("route configuration %s: %w", t.Name, err)
		}
	}
	rc := routeConfigurationHead(t.Name)
	size := 0
	for _, b := range encoded {
		size += protowire.SizeTag(virtualHostsField) + protowire.SizeBytes(len(b))
	}
	raw := make([]byte, 0, size)
	for i, b := range encoded {
		raw = protowire.AppendTag(raw, virtualHostsField, protowire.BytesType)
		start := len(raw) + protowire.SizeVarint(uint64(len(b)))
		raw = protowire.AppendBytes(raw, b)
		// From now on the bytes are this configuration's, and the
		// previous configuration they were a slice of can go.
		encoded[i] = raw[start:len(raw):len(raw)]
	}
	rc.ProtoReflect().SetUnknown(raw)
	b.routeConfigs[t.Name], b.routes = &builtRouteConfig{vhosts: t.VirtualHosts, rc: rc, encoded: encoded}, append(b.routes, rc)
	return nil
}

// virtualHost encodes v. The same virtual host in the table of another
// listener (HTTP and HTTPS, most often), encoded earlier in this
// translation, gives its bytes whole; otherwise the routes v shares with
// before (the same virtual host's previous IR, encoded as was), or with
// another listener's virtual host of its name, take their bytes from that
// encoding. The other routes are built and marshalled one at a time
// (encodeVirtualHost). Sharing by virtual host needs no lookup per
// route, where a map of every route encoded would be built and probed on
// every translation.
func (x *Translator) virtualHost(v, before *ir.VirtualHost, was []byte) ([]byte, error) {
	var other *encodedVirtualHost
	for i, e := range x.encodedVhosts[v.Name] {
		if sameVirtualHost(e.vhost, v) {
			return e.bytes, nil
		}
		other = &x.encodedVhosts[v.Name][i]
	}
	out, err := x.encodeVirtualHost(v, routesOf(before, was), other)
	if err != nil {
		return nil, err
	}
	x.encodedVhosts[v.Name] = append(x.encodedVhosts[v.Name], encodedVirtualHost{vhost: v, bytes: out})
	return out, nil
}

// encodedVirtualHost is a virtual host encoded in the translation under
// way.
type encodedVirtualHost struct {
	vhost *ir.VirtualHost
	bytes []byte
}

// sameVirtualHost reports whether two IR virtual hosts encode alike: the
// same fields and the same routes (the first stage hands out the same
// *ir.Route to every table it is in).
func sameVirtualHost(a, b *ir.VirtualHost) bool {
	if a == b {
		return true
	}
	if !slices.Equal(a.Routes, b.Routes) {
		return false
	}
	x, y := *a, *b
	x.Routes, y.Routes = nil, nil
	return reflect.DeepEqual(x, y)
}

// encodeVirtualHost encodes v, taking the bytes of the routes known has,
// or other has, from there. Every other route is built in x.messages and
// marshalled at once into x.encodings, so that the next reuses its
// messages; the virtual host is then written in one allocation of its
// size.
func (x *Translator) encodeVirtualHost(v *ir.VirtualHost, known map[*ir.Route][]byte, other *encodedVirtualHost) ([]byte, error) {
	var shared map[*ir.Route][]byte
	if other != nil {
		shared = routesOf(other.vhost, other.bytes)
	}
	head := virtualHostHead(v)
	size := sized.Size(head)
	parts := make([][]byte, len(v.Routes))
	encodings := x.encodings[:0]
	for i, r := range v.Routes {
		b, ok := known[r]
		if !ok {
			b, ok = shared[r]
		}
		if !ok {
			start := len(encodings)
			m := x.route(r, &x.messages)
			var err error
			encodings, err = appendRoute(encodings, m, routeSize(m))
			x.messages.clear()
			if err != nil {
				return nil, fmt.Errorf("virtual host %s, route %s: %w", v.Name, r.Name, err)
			}
			// Should encodings grow into a new array, this slice of the
			// old one stays as it is.
			b = encodings[start:]
		}
		parts[i] = b
		size += protowire.SizeTag(routesField) + protowire.SizeBytes(len(b))
	}
	x.encodings = encodings
	out, err := sized.MarshalAppend(make([]byte, 0, size), head)
	if err != nil {
		return nil, fmt.Errorf("virtual host %s: %w", v.Name, err)
	}
	for _, b := range parts {
		out = protowire.AppendTag(out, routesField, protowire.BytesType)
		out = protowire.AppendBytes(out, b)
	}
	return out, nil
}

// routesOf maps the routes of a virtual host to their bytes in its
// encoding, which holds them in order after the other fields.
func routesOf(v *ir.VirtualHost, encoded []byte) map[*ir.Route][]byte {
	if v == nil || len(v.Routes) == 0 {
		return nil
	}
	out := make(map[*ir.Route][]byte, len(v.Routes))
	b, i := encoded, 0
	for len(b) > 0 && i < len(v.Routes) {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return out
		}
		b = b[n:]
		if num == routesField && typ == protowire.BytesType {
			value, m := protowire.ConsumeBytes(b)
			if m < 0 {
				return out
			}
			out[v.Routes[i]] = value
			i++
			b = b[m:]
			continue
		}
		m := protowire.ConsumeFieldValue(num, typ, b)
		if m < 0 {
			return out
		}
		b = b[m:]
	}
	return out
}

// Decoded returns r with its route configurations decoded: the
// Translator hands them out with their virtual hosts encoded, as they are
// served, and whatever reads the virtual hosts (checks, the simulator,
// rendering) needs them as messages. The other resources are shared, and
// so is a route in several configurations (HTTP and HTTPS listeners,
// most often): each is decoded once, since decoding each copy would hold
// every route twice at translate's peak.
func Decoded(r *Resources) (*Resources, error) {
	out := *r
	out.Routes = make([]*routev3.RouteConfiguration, len(r.Routes))
	routes := map[string]*routev3.Route{}
	for i, rc := range r.Routes {
		d, err := decodeRouteConfiguration(rc, routes)
		if err != nil {
			return nil, fmt.Errorf("route configuration %s: %w", rc.Name, err)
		}
		out.Routes[i] = d
	}
	return &out, nil
}

// decodeRouteConfiguration returns rc with its encoded virtual hosts
// decoded, taking each route from routes, by its encoding, when it was
// decoded before.
func decodeRouteConfiguration(rc *routev3.RouteConfiguration, routes map[string]*routev3.Route) (*routev3.RouteConfiguration, error) {
	raw := rc.ProtoReflect().GetUnknown()
	if len(raw) == 0 {
		return rc, nil
	}
	out := &routev3.RouteConfiguration{}
	src, dst := rc.ProtoReflect(), out.ProtoReflect()
	src.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		dst.Set(fd, v)
		return true
	})
	for len(raw) > 0 {
		num, typ, n := protowire.ConsumeTag(raw)
		if n < 0 || num != virtualHostsField || typ != protowire.BytesType {
			return nil, fmt.Errorf("unknown field %d among the encoded virtual hosts", num)
		}
		b, m := protowire.ConsumeBytes(raw[n:])
		if m < 0 {
			return nil, protowire.ParseError(m)
		}
		vh, err := decodeVirtualHost(b, routes)
		if err != nil {
			return nil, err
		}
		out.VirtualHosts = append(out.VirtualHosts, vh)
		raw = raw[n+m:]
	}
	return out, nil
}

// decodeVirtualHost decodes an encoded virtual host, its routes through
// routes.
func decodeVirtualHost(b []byte, routes map[string]*routev3.Route) (*routev3.VirtualHost, error) {
	var head []byte
	var list []*routev3.Route
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return nil, protowire.ParseError(n)
		}
		m := protowire.ConsumeFieldValue(num, typ, b[n:])
		if m < 0 {
			return nil, protowire.ParseError(m)
		}
		if num != routesField || typ != protowire.BytesType {
			head = append(head, b[:n+m]...)
			b = b[n+m:]
			continue
		}
		value, _ := protowire.ConsumeBytes(b[n:])
		r, ok := routes[string(value)]
		if !ok {
			r = &routev3.Route{}
			if err := proto.Unmarshal(value, r); err != nil {
				return nil, err
			}
			routes[string(value)] = r
		}
		list = append(list, r)
		b = b[n+m:]
	}
	vh := &routev3.VirtualHost{}
	if err := proto.Unmarshal(head, vh); err != nil {
		return nil, err
	}
	vh.Routes = list
	return vh, nil
}

// routeConfigurationHead is a route configuration without its virtual
// hosts.
func routeConfigurationHead(name string) *routev3.RouteConfiguration {
	return &routev3.RouteConfiguration{
		Name: name,
		// Clusters are served by CDS before routes refer to them; Envoy need
		// not check, and skipping the check keeps route updates cheap.
		ValidateClusters: wrapperspb.Bool(false),
		// The Host header may carry a port and virtual hosts list names
		// only; the port is ignored for matching, but the backend gets the
		// Host header as the client sent it.
		IgnorePortInHostMatching: true,
		// When Envoy received the request, in seconds since the epoch
		// with milliseconds, which APM agents read to measure queueing
		// before the backend: Contour adds it to every request.
		RequestHeadersToAdd: []*corev3.HeaderValueOption{{
			Header:       &corev3.HeaderValue{Key: "x-request-start", Value: "t=%START_TIME(%s.%3f)%"},
			AppendAction: corev3.HeaderValueOption_APPEND_IF_EXISTS_OR_ADD,
		}},
	}
}
