package xds

import (
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"

	"isobar.dev/controller/pkg/ir"
)

// PlainRouteConfiguration builds t's route configuration as messages,
// without encoding anything: what a Translator's must decode to, with the
// Gateway's global authorization server.
func PlainRouteConfiguration(t *ir.RouteTable, global *ir.GlobalExtAuth) *routev3.RouteConfiguration {
	rc := routeConfigurationHead(t.Name)
	for _, v := range t.VirtualHosts {
		vh := virtualHostHead(v)
		for _, r := range v.Routes {
			vh.Routes = append(vh.Routes, (&Translator{actions: map[string]*routev3.Route_Route{}, globalExtAuth: global}).route(r, &routeMessages{}))
		}
		rc.VirtualHosts = append(rc.VirtualHosts, vh)
	}
	return rc
}

// Encoded are the encodings of the virtual hosts of the route
// configuration the Translator built last under name.
func (x *Translator) Encoded(name string) [][]byte {
	for _, l := range x.listeners {
		if b := l.routeConfigs[name]; b != nil {
			return b.encoded
		}
	}
	return nil
}

// RouteEncodings builds an IR route's message and encodes it twice as
// routeConfiguration does, saying whether that took the generated
// marshalling.
func RouteEncodings(r *ir.Route) (m *routev3.Route, first, second []byte, fast bool, err error) {
	m = (&Translator{actions: map[string]*routev3.Route_Route{}}).route(r, &routeMessages{})
	_, fast = fastMarshal(m)
	for _, out := range []*[]byte{&first, &second} {
		size := routeSize(m)
		if *out, err = appendRoute(make([]byte, 0, size), m, size); err != nil {
			return nil, nil, nil, fast, err
		}
	}
	return m, first, second, fast, nil
}
