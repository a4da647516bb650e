package xds

import (
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	runtimev3 "github.com/envoyproxy/go-control-plane/envoy/service/runtime/v3"

	"isobar.dev/api/envoyruntime"
)

// The runtime layer limits each TCP listener's connections when the
// profile asks, and is served even when it sets nothing, and when there is
// nothing else to serve: every Envoy waits for it.
func TestRuntimeLayer(t *testing.T) {
	listener := func(name string, protocol corev3.SocketAddress_Protocol) *listenerv3.Listener {
		return &listenerv3.Listener{Name: name, Address: &corev3.Address{Address: &corev3.Address_SocketAddress{
			SocketAddress: &corev3.SocketAddress{Protocol: protocol}}}}
	}
	ls := []*listenerv3.Listener{listener("http_80", corev3.SocketAddress_TCP), listener("udp_53", corev3.SocketAddress_UDP)}
	limited := runtimeLayer(ls, Settings{MaxConnectionsPerListener: 7})
	if got := limited.GetLayer().GetFields(); len(got) != 1 || got[envoyruntime.ListenerConnectionLimit("http_80")].GetNumberValue() != 7 {
		t.Errorf("limited layer %v, want http_80's limit alone", got)
	}
	for name, r := range map[string]*Resources{"no limit": {Runtimes: []*runtimev3.Runtime{runtimeLayer(ls, Settings{})}}, "nothing": Nothing()} {
		if len(r.Runtimes) != 1 || r.Runtimes[0].GetName() != envoyruntime.Layer || len(r.Runtimes[0].GetLayer().GetFields()) != 0 {
			t.Errorf("%s: runtimes %v, want the empty layer %s", name, r.Runtimes, envoyruntime.Layer)
		}
	}
}
