package xdsserver

import (
	"fmt"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	"github.com/envoyproxy/go-control-plane/pkg/cache/types"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// packer hands the cache route configurations whose marshalling is mostly
// copying: the virtual hosts go in as bytes already marshalled (unknown
// fields, which marshal as they are and which Envoy reads as the
// virtual_hosts they are on the wire), each built from the marshalled
// bytes of its routes. A route is marshalled once, when it first appears;
// a change to one route of 20,000 then costs that route and a copy, where
// marshalling the whole configuration again costs every route.
type packer struct {
	routes map[*routev3.Route][]byte
	// vhosts are those of the configurations packed last.
	vhosts map[*routev3.VirtualHost][]byte
}

func newPacker() *packer {
	return &packer{routes: map[*routev3.Route][]byte{}, vhosts: map[*routev3.VirtualHost][]byte{}}
}

var deterministic = proto.MarshalOptions{Deterministic: true}

// pack returns, for each changed route configuration, a message that
// marshals to an encoding of it. It looks at all the configurations served
// so that it can forget the parts of those that are gone.
func (p *packer) pack(all map[string]proto.Message, changed map[string]types.Resource) error {
	vhosts := map[*routev3.VirtualHost][]byte{}
	live := 0
	for _, m := range all {
		for _, vh := range m.(*routev3.RouteConfiguration).VirtualHosts {
			live += len(vh.Routes)
			if b, ok := p.vhosts[vh]; ok {
				vhosts[vh] = b
			}
		}
	}
	for name, m := range changed {
		rc := m.(*routev3.RouteConfiguration)
		size := 0
		for _, vh := range rc.VirtualHosts {
			b, ok := vhosts[vh]
			if !ok {
				var err error
				if b, err = p.vhost(vh); err != nil {
					return fmt.Errorf("route configuration %s: %w", name, err)
				}
				vhosts[vh] = b
			}
			size += protowire.SizeTag(2) + protowire.SizeBytes(len(b))
		}
		raw := make([]byte, 0, size)
		for _, vh := range rc.VirtualHosts {
			raw = protowire.AppendTag(raw, 2, protowire.BytesType) // virtual_hosts
			raw = protowire.AppendBytes(raw, vhosts[vh])
		}
		packed := without(rc, "virtual_hosts")
		packed.ProtoReflect().SetUnknown(raw)
		changed[name] = packed
	}
	p.vhosts = vhosts
	if len(p.routes) > 2*live+1024 {
		routes := make(map[*routev3.Route][]byte, live)
		for _, m := range all {
			for _, vh := range m.(*routev3.RouteConfiguration).VirtualHosts {
				for _, r := range vh.Routes {
					if b, ok := p.routes[r]; ok {
						routes[r] = b
					}
				}
			}
		}
		p.routes = routes
	}
	return nil
}

// vhost marshals a virtual host from its routes' bytes.
func (p *packer) vhost(vh *routev3.VirtualHost) ([]byte, error) {
	head, err := deterministic.Marshal(without(vh, "routes"))
	if err != nil {
		return nil, fmt.Errorf("virtual host %s: %w", vh.Name, err)
	}
	size := len(head)
	parts := make([][]byte, len(vh.Routes))
	for i, r := range vh.Routes {
		b, ok := p.routes[r]
		if !ok {
			if b, err = deterministic.Marshal(r); err != nil {
				return nil, fmt.Errorf("route %s: %w", r.Name, err)
			}
			p.routes[r] = b
		}
		parts[i] = b
		size += protowire.SizeTag(3) + protowire.SizeBytes(len(b))
	}
	out := make([]byte, 0, size)
	out = append(out, head...)
	for _, b := range parts {
		out = protowire.AppendTag(out, 3, protowire.BytesType) // routes
		out = protowire.AppendBytes(out, b)
	}
	return out, nil
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
