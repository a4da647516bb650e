package xdsserver

import (
	"fmt"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	"github.com/envoyproxy/go-control-plane/pkg/cache/types"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// Field numbers of the encodings the packer writes and reads back.
const (
	virtualHostsField protowire.Number = 2 // RouteConfiguration.virtual_hosts
	routesField       protowire.Number = 3 // VirtualHost.routes
)

// packer hands the cache route configurations whose marshalling is mostly
// copying: the virtual hosts go in as bytes already marshalled (unknown
// fields, which marshal as they are and which Envoy reads as the
// virtual_hosts they are on the wire). A route is marshalled once, when it
// first appears; a change to one route of 20,000 then costs that route and
// a copy, where marshalling the whole configuration again costs every
// route.
//
// The only bytes kept are those of the packed configurations themselves:
// each virtual host's are a slice of its configuration's, and a changed
// virtual host finds its unchanged routes' bytes in its previous encoding
// (which lists them in the order of its routes). A cache of every
// virtual host's and route's bytes beside them held the same bytes twice
// more (12 MB at 10,000 routes).
type packer struct {
	// configs are the virtual hosts of each configuration packed last, in
	// its order. The second stage keeps an unchanged virtual host's
	// message, and a change leaves the others where they were, so a
	// virtual host is found by its position: with 100,000 of them, a map
	// rebuilt on every change cost more than the copying.
	configs map[string][]packedVhost
}

// packedVhost is a virtual host and its encoding, a slice of its packed
// configuration's.
type packedVhost struct {
	vh    *routev3.VirtualHost
	bytes []byte
}

func newPacker() *packer {
	return &packer{configs: map[string][]packedVhost{}}
}

var deterministic = proto.MarshalOptions{Deterministic: true}

// pack returns, for each changed route configuration, a message that
// marshals to an encoding of it. It looks at all the configurations served
// so that it can forget those that are gone.
func (p *packer) pack(all map[string]proto.Message, changed map[string]types.Resource) error {
	for name := range p.configs {
		if _, ok := all[name]; !ok {
			delete(p.configs, name)
		}
	}
	for name, m := range changed {
		rc := m.(*routev3.RouteConfiguration)
		vhosts, err := vhostBytes(rc, p.configs[name])
		if err != nil {
			return fmt.Errorf("route configuration %s: %w", name, err)
		}
		size := 0
		for _, v := range vhosts {
			size += protowire.SizeTag(virtualHostsField) + protowire.SizeBytes(len(v.bytes))
		}
		raw := make([]byte, 0, size)
		for i, v := range vhosts {
			raw = protowire.AppendTag(raw, virtualHostsField, protowire.BytesType)
			start := len(raw) + protowire.SizeVarint(uint64(len(v.bytes)))
			raw = protowire.AppendBytes(raw, v.bytes)
			// From now on the bytes are the configuration's, and what
			// they were a slice of can go.
			vhosts[i].bytes = raw[start:len(raw):len(raw)]
		}
		p.configs[name] = vhosts
		packed := without(rc, "virtual_hosts")
		packed.ProtoReflect().SetUnknown(raw)
		changed[name] = packed
	}
	return nil
}

// vhostBytes returns the virtual hosts of rc with their encodings: the
// previous ones where the message is the same, built from the previous
// encoding of the same virtual host where it changed.
func vhostBytes(rc *routev3.RouteConfiguration, prev []packedVhost) ([]packedVhost, error) {
	out := make([]packedVhost, len(rc.VirtualHosts))
	// byName finds a virtual host that moved (one added or removed before
	// it); built only then.
	var byName map[string]packedVhost
	for i, vh := range rc.VirtualHosts {
		if i < len(prev) && prev[i].vh == vh {
			out[i] = prev[i]
			continue
		}
		var before packedVhost
		if i < len(prev) && prev[i].vh.Name == vh.Name {
			before = prev[i]
		} else {
			if byName == nil {
				byName = make(map[string]packedVhost, len(prev))
				for _, v := range prev {
					byName[v.vh.Name] = v
				}
			}
			before = byName[vh.Name]
		}
		if before.vh == vh {
			out[i] = before
			continue
		}
		b, err := vhost(vh, before)
		if err != nil {
			return nil, err
		}
		out[i] = packedVhost{vh: vh, bytes: b}
	}
	return out, nil
}

// vhost marshals a virtual host, taking the bytes of the routes it shares
// with before (the same virtual host's previous message and encoding) from
// that encoding.
func vhost(vh *routev3.VirtualHost, before packedVhost) ([]byte, error) {
	head, err := deterministic.Marshal(without(vh, "routes"))
	if err != nil {
		return nil, fmt.Errorf("virtual host %s: %w", vh.Name, err)
	}
	known := routesOf(before)
	size := len(head)
	parts := make([][]byte, len(vh.Routes))
	for i, r := range vh.Routes {
		b, ok := known[r]
		if !ok {
			if b, err = deterministic.Marshal(r); err != nil {
				return nil, fmt.Errorf("route %s: %w", r.Name, err)
			}
		}
		parts[i] = b
		size += protowire.SizeTag(routesField) + protowire.SizeBytes(len(b))
	}
	out := make([]byte, 0, size)
	out = append(out, head...)
	for _, b := range parts {
		out = protowire.AppendTag(out, routesField, protowire.BytesType)
		out = protowire.AppendBytes(out, b)
	}
	return out, nil
}

// routesOf maps the routes of a packed virtual host to their bytes in its
// encoding, which holds them in order after the other fields.
func routesOf(v packedVhost) map[*routev3.Route][]byte {
	if v.vh == nil || len(v.vh.Routes) == 0 {
		return nil
	}
	out := make(map[*routev3.Route][]byte, len(v.vh.Routes))
	b, i := v.bytes, 0
	for len(b) > 0 && i < len(v.vh.Routes) {
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
			out[v.vh.Routes[i]] = value
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

// without is a shallow copy of m less one field: the copy shares m's
// other fields, which nothing changes.
func without[M proto.Message](m M, field protoreflect.Name) M {
	src := m.ProtoReflect()
	dst := src.New()
	src.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		if fd.Name() != field {
			dst.Set(fd, v)
		}
		return true
	})
	return dst.Interface().(M)
}
