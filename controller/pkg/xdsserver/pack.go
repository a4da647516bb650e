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
	// configs are the virtual hosts of each configuration packed last, in
	// its order. The second stage keeps an unchanged virtual host's
	// message, and a change leaves the others where they were, so a
	// virtual host is found by its position: with 100,000 of them, a map
	// rebuilt on every change cost more than the copying.
	configs map[string][]packedVhost
	// routeCount is the number of routes of each configuration in configs.
	routeCount map[string]int
}

type packedVhost struct {
	vh    *routev3.VirtualHost
	bytes []byte
}

func newPacker() *packer {
	return &packer{routes: map[*routev3.Route][]byte{}, configs: map[string][]packedVhost{}, routeCount: map[string]int{}}
}

var deterministic = proto.MarshalOptions{Deterministic: true}

// pack returns, for each changed route configuration, a message that
// marshals to an encoding of it. It looks at all the configurations served
// so that it can forget the parts of those that are gone.
func (p *packer) pack(all map[string]proto.Message, changed map[string]types.Resource) error {
	for name := range p.configs {
		if _, ok := all[name]; !ok {
			delete(p.configs, name)
			delete(p.routeCount, name)
		}
	}
	for name, m := range changed {
		rc := m.(*routev3.RouteConfiguration)
		vhosts, err := p.vhosts(rc, p.configs[name])
		if err != nil {
			return fmt.Errorf("route configuration %s: %w", name, err)
		}
		p.configs[name] = vhosts
		size, routes := 0, 0
		for _, v := range vhosts {
			size += protowire.SizeTag(2) + protowire.SizeBytes(len(v.bytes))
			routes += len(v.vh.Routes)
		}
		p.routeCount[name] = routes
		raw := make([]byte, 0, size)
		for _, v := range vhosts {
			raw = protowire.AppendTag(raw, 2, protowire.BytesType) // virtual_hosts
			raw = protowire.AppendBytes(raw, v.bytes)
		}
		packed := without(rc, "virtual_hosts")
		packed.ProtoReflect().SetUnknown(raw)
		changed[name] = packed
	}
	p.forgetRoutes()
	return nil
}

// vhosts returns the virtual hosts of rc with their bytes, taken from the
// configuration's previous ones where the message is the same.
func (p *packer) vhosts(rc *routev3.RouteConfiguration, prev []packedVhost) ([]packedVhost, error) {
	out := make([]packedVhost, len(rc.VirtualHosts))
	// byMessage finds a virtual host that moved (one added or removed
	// before it); built only then.
	var byMessage map[*routev3.VirtualHost][]byte
	for i, vh := range rc.VirtualHosts {
		if i < len(prev) && prev[i].vh == vh {
			out[i] = prev[i]
			continue
		}
		if byMessage == nil {
			byMessage = make(map[*routev3.VirtualHost][]byte, len(prev))
			for _, v := range prev {
				byMessage[v.vh] = v.bytes
			}
		}
		b, ok := byMessage[vh]
		if !ok {
			var err error
			if b, err = p.vhost(vh); err != nil {
				return nil, err
			}
		}
		out[i] = packedVhost{vh: vh, bytes: b}
	}
	return out, nil
}

// forgetRoutes drops the bytes of routes no configuration has any more,
// once they outnumber the live ones twice: a walk over every route, paid
// for by the changes that made them.
func (p *packer) forgetRoutes() {
	live := 0
	for _, n := range p.routeCount {
		live += n
	}
	if len(p.routes) <= 2*live+1024 {
		return
	}
	routes := make(map[*routev3.Route][]byte, live)
	for _, vhosts := range p.configs {
		for _, v := range vhosts {
			for _, r := range v.vh.Routes {
				if b, ok := p.routes[r]; ok {
					routes[r] = b
				}
			}
		}
	}
	p.routes = routes
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
