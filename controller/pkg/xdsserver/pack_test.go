package xdsserver

import (
	"path/filepath"
	"slices"
	"testing"
	"unsafe"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	"github.com/envoyproxy/go-control-plane/pkg/cache/types"
	"google.golang.org/protobuf/proto"

	"isobar.dev/controller/pkg/offline"
)

// A packed route configuration must marshal to bytes that decode to the
// configuration itself, first time and after one route changed (when the
// other routes' bytes come from the cache).
func TestPackedRouteConfigurationsDecodeToThemselves(t *testing.T) {
	files, err := filepath.Glob("../offline/testdata/*.in.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("golden inputs: %v", err)
	}
	for _, f := range files {
		r, err := offline.TranslateFiles(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, g := range r.XDS {
			p := newPacker()
			all := map[string]proto.Message{}
			for _, rc := range g.Routes {
				all[rc.Name] = rc
			}
			checkPacked(t, f, p, all)
			// One route of each configuration changes: a new virtual
			// host with a new route, the other routes shared.
			for name, m := range all {
				rc := m.(*routev3.RouteConfiguration)
				if len(rc.VirtualHosts) == 0 || len(rc.VirtualHosts[0].Routes) == 0 {
					continue
				}
				changed := proto.Clone(rc.VirtualHosts[0]).(*routev3.VirtualHost)
				changed.Routes = append([]*routev3.Route(nil), rc.VirtualHosts[0].Routes...)
				changed.Routes[0] = proto.Clone(changed.Routes[0]).(*routev3.Route)
				changed.Routes[0].Name += "-changed"
				next := proto.Clone(rc).(*routev3.RouteConfiguration)
				next.VirtualHosts = append([]*routev3.VirtualHost{changed}, rc.VirtualHosts[1:]...)
				all[name] = next
			}
			checkPacked(t, f+" (one route changed)", p, all)
			// The first virtual host goes, then comes back: the others
			// move, and are found where they went.
			first := map[string]*routev3.VirtualHost{}
			for name, m := range all {
				rc := proto.Clone(m).(*routev3.RouteConfiguration)
				rc.VirtualHosts = slices.Clone(m.(*routev3.RouteConfiguration).VirtualHosts)
				if len(rc.VirtualHosts) > 0 {
					first[name] = rc.VirtualHosts[0]
					rc.VirtualHosts = rc.VirtualHosts[1:]
				}
				all[name] = rc
			}
			checkPacked(t, f+" (first virtual host removed)", p, all)
			for name, vh := range first {
				rc := all[name].(*routev3.RouteConfiguration)
				rc.VirtualHosts = append([]*routev3.VirtualHost{vh}, rc.VirtualHosts...)
			}
			checkPacked(t, f+" (first virtual host back)", p, all)
		}
	}
}

func checkPacked(t *testing.T, what string, p *packer, all map[string]proto.Message) {
	t.Helper()
	changed := map[string]types.Resource{}
	for name, m := range all {
		changed[name] = m
	}
	if err := p.pack(all, changed); err != nil {
		t.Fatal(err)
	}
	for name, packed := range changed {
		b, err := deterministic.Marshal(packed)
		if err != nil {
			t.Fatal(err)
		}
		got := &routev3.RouteConfiguration{}
		if err := proto.Unmarshal(b, got); err != nil {
			t.Fatalf("%s: %s: %v", what, name, err)
		}
		if !proto.Equal(got, all[name]) {
			t.Errorf("%s: route configuration %s decodes to something else", what, name)
		}
		raw := packed.(proto.Message).ProtoReflect().GetUnknown()
		if len(all[name].(*routev3.RouteConfiguration).VirtualHosts) > 0 && len(raw) == 0 {
			t.Errorf("%s: route configuration %s was not packed", what, name)
		}
		// What the packer keeps is the packed bytes, not a copy of
		// them or what they were copied from.
		for _, v := range p.configs[name] {
			if !within(v.bytes, raw) {
				t.Errorf("%s: route configuration %s: virtual host %s keeps bytes outside the packed configuration", what, name, v.vh.Name)
			}
		}
	}
}

// within reports whether b is a slice of whole.
func within(b, whole []byte) bool {
	if len(b) == 0 || len(whole) == 0 {
		return len(b) == 0
	}
	start := uintptr(unsafe.Pointer(unsafe.SliceData(whole)))
	p := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	return p >= start && p+uintptr(len(b)) <= start+uintptr(len(whole))
}
