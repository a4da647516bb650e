package xds_test

import (
	"path/filepath"
	"slices"
	"testing"
	"unsafe"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	"google.golang.org/protobuf/proto"

	"isobar.dev/controller/pkg/ir"
	"isobar.dev/controller/pkg/offline"
	"isobar.dev/controller/pkg/xds"
)

// A Translator's route configurations, whose virtual hosts are encoded,
// must decode to the configuration built plainly from the IR: first time,
// after one route of each virtual host changed (when the other routes'
// bytes come from the previous encoding), and after the first virtual host
// of each table went and came back (when the others move).
func TestEncodedRouteConfigurationsDecodeToThemselves(t *testing.T) {
	for f, gateways := range goldenGateways(t) {
		for _, g := range gateways {
			x := xds.NewTranslator(xds.DefaultSettings())
			checkEncoded(t, f, x, g)
			g = editTables(g, func(vhosts []*ir.VirtualHost) []*ir.VirtualHost {
				out := slices.Clone(vhosts)
				for i, v := range out {
					if len(v.Routes) == 0 {
						continue
					}
					changed := *v
					changed.Routes = slices.Clone(v.Routes)
					r := *changed.Routes[0]
					r.Name += "-changed"
					changed.Routes[0] = &r
					out[i] = &changed
				}
				return out
			})
			checkEncoded(t, f+" (one route of each virtual host changed)", x, g)
			without := editTables(g, func(vhosts []*ir.VirtualHost) []*ir.VirtualHost {
				if len(vhosts) < 2 {
					return vhosts
				}
				return vhosts[1:]
			})
			checkEncoded(t, f+" (first virtual host removed)", x, without)
			checkEncoded(t, f+" (first virtual host back)", x, g)
			// Every route's encoding depends on the global authorization
			// server: none of it is kept when the server changes.
			checked := *g
			checked.ExtAuth = &ir.GlobalExtAuth{Server: ir.ExtAuth{GRPC: true, Cluster: "extauth/test/authz", Authority: "authz.test"}}
			if g.ExtAuth != nil {
				checked.ExtAuth = nil
			}
			checkEncoded(t, f+" (global authorization changed)", x, &checked)
			checkEncoded(t, f+" (global authorization back)", x, g)
		}
	}
}

// goldenGateways are the IR Gateways of each golden input of the offline
// tests, by file.
func goldenGateways(t *testing.T) map[string][]*ir.Gateway {
	t.Helper()
	files, err := filepath.Glob("../offline/testdata/*.in.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("golden inputs: %v", err)
	}
	out := map[string][]*ir.Gateway{}
	for _, f := range files {
		r, err := offline.TranslateFiles(f)
		if err != nil {
			t.Fatal(err)
		}
		out[f] = r.Gateways.Gateways
	}
	return out
}

// editTables returns a copy of g whose route tables' virtual hosts are
// edit's, sharing everything else; the IR itself is never changed.
func editTables(g *ir.Gateway, edit func([]*ir.VirtualHost) []*ir.VirtualHost) *ir.Gateway {
	table := func(t *ir.RouteTable) *ir.RouteTable {
		if t == nil {
			return nil
		}
		c := *t
		c.VirtualHosts = edit(t.VirtualHosts)
		return &c
	}
	out := *g
	out.Listeners = make([]*ir.Listener, len(g.Listeners))
	for i, l := range g.Listeners {
		c := *l
		c.HTTP = table(l.HTTP)
		c.Chains = make([]*ir.Chain, len(l.Chains))
		for j, ch := range l.Chains {
			cc := *ch
			cc.HTTP = table(ch.HTTP)
			c.Chains[j] = &cc
		}
		out.Listeners[i] = &c
	}
	return &out
}

func checkEncoded(t *testing.T, what string, x *xds.Translator, g *ir.Gateway) {
	t.Helper()
	r, err := x.Translate(g)
	if err != nil {
		t.Fatal(err)
	}
	tables := map[string]*ir.RouteTable{}
	for _, l := range g.Listeners {
		if l.HTTP != nil {
			tables[l.HTTP.Name] = l.HTTP
		}
		for _, c := range l.Chains {
			if c.HTTP != nil {
				tables[c.HTTP.Name] = c.HTTP
			}
		}
	}
	if len(r.Routes) != len(tables) {
		t.Errorf("%s: %d route configurations for %d route tables", what, len(r.Routes), len(tables))
	}
	decoded, err := xds.Decoded(r)
	if err != nil {
		t.Fatalf("%s: decoding: %v", what, err)
	}
	for i, rc := range r.Routes {
		b, err := proto.MarshalOptions{Deterministic: true}.Marshal(rc)
		if err != nil {
			t.Fatal(err)
		}
		got := &routev3.RouteConfiguration{}
		if err := proto.Unmarshal(b, got); err != nil {
			t.Fatalf("%s: %s: %v", what, rc.Name, err)
		}
		if want := xds.PlainRouteConfiguration(tables[rc.Name], g.ExtAuth); !proto.Equal(got, want) {
			t.Errorf("%s: route configuration %s decodes to something else", what, rc.Name)
		}
		if !proto.Equal(decoded.Routes[i], got) {
			t.Errorf("%s: route configuration %s: Decoded gives something else than unmarshalling its encoding", what, rc.Name)
		}
		raw := rc.ProtoReflect().GetUnknown()
		if len(rc.VirtualHosts) > 0 || len(tables[rc.Name].VirtualHosts) > 0 && len(raw) == 0 {
			t.Errorf("%s: route configuration %s has virtual hosts as messages, not encoded", what, rc.Name)
		}
		// What the Translator keeps is the served bytes, not a copy of
		// them or what they were copied from.
		for i, v := range x.Encoded(rc.Name) {
			if !within(v, raw) {
				t.Errorf("%s: route configuration %s: virtual host %d keeps bytes outside the configuration's", what, rc.Name, i)
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
