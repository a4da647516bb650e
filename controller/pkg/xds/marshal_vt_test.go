//go:build vtprotobuf

package xds_test

import (
	"bytes"
	"testing"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	"google.golang.org/protobuf/proto"

	"isobar.dev/controller/pkg/ir"
	"isobar.dev/controller/pkg/xds"
)

// With the vtprotobuf tag (the Makefile's), routes are marshalled by the
// code go-control-plane generates. For every route of the golden inputs
// that must decode to the message, and give the same bytes every time: the
// encodings are kept, reused and compared across translations. (They are
// not reflection's bytes: a oneof's field comes in another place.)
func TestGeneratedMarshallingDecodesToTheRoute(t *testing.T) {
	routes, fast := 0, 0
	for f, gateways := range goldenGateways(t) {
		for _, g := range gateways {
			for _, l := range g.Listeners {
				tables := []*ir.RouteTable{l.HTTP}
				for _, ch := range l.Chains {
					tables = append(tables, ch.HTTP)
				}
				for _, tb := range tables {
					if tb == nil {
						continue
					}
					for _, v := range tb.VirtualHosts {
						for _, route := range v.Routes {
							m, first, second, generated, err := xds.RouteEncodings(route)
							if err != nil {
								t.Fatalf("%s, route %s: %v", f, route.Name, err)
							}
							routes++
							if generated {
								fast++
							}
							decoded := &routev3.Route{}
							if err := proto.Unmarshal(first, decoded); err != nil || !proto.Equal(decoded, m) {
								t.Errorf("%s, route %s: the encoding decodes to another route (%v)", f, route.Name, err)
							}
							if !bytes.Equal(first, second) {
								t.Errorf("%s, route %s: two encodings differ", f, route.Name)
							}
						}
					}
				}
			}
		}
	}
	if fast == 0 || fast < routes/2 {
		t.Errorf("%d of %d routes took the generated marshalling", fast, routes)
	}
}
