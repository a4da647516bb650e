package xds

import (
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	runtimev3 "github.com/envoyproxy/go-control-plane/envoy/service/runtime/v3"
	"google.golang.org/protobuf/types/known/structpb"

	"isobar.dev/api/envoyruntime"
)

// runtimeLayer is the runtime layer served over RTDS: the settings Envoy
// reads from runtime keys named after listeners, which only translation
// knows. Envoy reads a listener's connection limit as it accepts each
// connection, so a new limit, or a new listener's, holds without a
// restart. UDP listeners have no connections to limit.
func runtimeLayer(listeners []*listenerv3.Listener, s Settings) *runtimev3.Runtime {
	fields := map[string]*structpb.Value{}
	if n := s.MaxConnectionsPerListener; n > 0 {
		for _, l := range listeners {
			if l.GetAddress().GetSocketAddress().GetProtocol() == corev3.SocketAddress_UDP {
				continue
			}
			fields[envoyruntime.ListenerConnectionLimit(l.GetName())] = structpb.NewNumberValue(float64(n))
		}
	}
	return &runtimev3.Runtime{Name: envoyruntime.Layer, Layer: &structpb.Struct{Fields: fields}}
}

// Nothing is what an Envoy is served when there is no Gateway to serve:
// no listeners nor clusters, and the runtime layer it waits for, empty.
func Nothing() *Resources {
	return &Resources{Runtimes: []*runtimev3.Runtime{runtimeLayer(nil, Settings{})}}
}
