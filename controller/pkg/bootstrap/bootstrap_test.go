package bootstrap

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	downstreamconnectionsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/resource_monitors/downstream_connections/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"

	"isobar.dev/api/envoyruntime"
	"isobar.dev/api/ports"
	"isobar.dev/controller/pkg/xdscheck"
)

func config(t *testing.T) Config {
	return Config{
		NodeID:        "web-isobar-envoy-abcde",
		Cluster:       "default/web",
		XDSAddress:    "web-isobar-controller.default.svc",
		XDSServerName: "web-isobar-controller.default.svc",
		CertsDir:      "/var/run/isobar/certs",
		OutputDir:     t.TempDir(),
		MaxHeapBytes:  900 << 20,
	}
}

// What `bootstrap` writes is what Envoy would accept: every message passes
// its validation rules, Anys included, and the files it refers to are the
// ones it wrote.
func TestWrite(t *testing.T) {
	c := config(t)
	if err := Write(c); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(c.OutputDir, BootstrapFile))
	if err != nil {
		t.Fatal(err)
	}
	b := &bootstrapv3.Bootstrap{}
	if err := protojson.Unmarshal(data, b); err != nil {
		t.Fatalf("envoy.json does not decode: %v", err)
	}
	if err := xdscheck.Validate(b); err != nil {
		t.Fatalf("bootstrap is invalid: %v", err)
	}
	if b.GetNode().GetId() != c.NodeID || b.GetAdmin().GetAddress().GetSocketAddress().GetAddress() != "127.0.0.1" {
		t.Errorf("node %v, admin %v", b.GetNode(), b.GetAdmin())
	}
	if b.GetOverloadManager() == nil {
		t.Error("no overload manager although MaxHeapBytes is set")
	}
	for _, name := range []string{sdsCertificateFile, sdsValidationCtxFile} {
		path := filepath.Join(c.OutputDir, name)
		if !strings.Contains(string(data), path) {
			t.Errorf("envoy.json does not refer to %s", path)
		}
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		resp := &discoveryv3.DiscoveryResponse{}
		if err := protojson.Unmarshal(raw, resp); err != nil {
			t.Fatalf("%s does not decode: %v", name, err)
		}
		if err := xdscheck.Validate(resp); err != nil {
			t.Errorf("%s is invalid: %v", name, err)
		}
		secret := &tlsv3.Secret{}
		if err := resp.Resources[0].UnmarshalTo(secret); err != nil || !strings.HasPrefix(secret.Name, "isobar_xds_") {
			t.Errorf("%s holds %v (%v)", name, secret, err)
		}
		if !strings.Contains(string(raw), c.CertsDir) {
			t.Errorf("%s does not read from %s", name, c.CertsDir)
		}
	}
	for _, leftover := range []string{BootstrapFile + ".tmp"} {
		if _, err := os.Stat(filepath.Join(c.OutputDir, leftover)); err == nil {
			t.Errorf("%s left behind", leftover)
		}
	}
}

func TestBuildRefusesIncompleteConfig(t *testing.T) {
	c := config(t)
	c.XDSAddress, c.NodeID = "", ""
	_, _, err := Build(c)
	if err == nil || !strings.Contains(err.Error(), "xDS address is required") || !strings.Contains(err.Error(), "node id is required") {
		t.Errorf("Build = %v, want errors naming the missing fields", err)
	}
	c = config(t)
	c.MaxHeapBytes = 0
	b, _, err := Build(c)
	if err != nil || b.GetOverloadManager() != nil {
		t.Errorf("without MaxHeapBytes: %v, overload manager %v", err, b.GetOverloadManager())
	}
}

// The connection limit and the requests per I/O cycle are Envoy's to
// enforce: the bootstrap carries them where Envoy reads them, valid, and
// the probes' and metrics' listeners are exempt from the limit. Without
// them the bootstrap has neither.
func TestLimits(t *testing.T) {
	for _, tc := range []struct {
		name                  string
		heap, connections     uint64
		perCycle              uint32
		monitors              []string
		exempt, runtime, none bool
	}{
		{name: "none", none: true},
		{name: "heap only", heap: 1 << 30, monitors: []string{"envoy.resource_monitors.fixed_heap"}},
		{name: "connections only", connections: 50000, monitors: []string{"envoy.resource_monitors.global_downstream_max_connections"}, exempt: true},
		{name: "both and per cycle", heap: 1 << 30, connections: 100, perCycle: 8, runtime: true,
			monitors: []string{"envoy.resource_monitors.fixed_heap", "envoy.resource_monitors.global_downstream_max_connections"}, exempt: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := config(t)
			c.MaxHeapBytes, c.MaxDownstreamConnections, c.MaxRequestsPerIOCycle = tc.heap, tc.connections, tc.perCycle
			b, _, err := Build(c)
			if err != nil {
				t.Fatal(err)
			}
			if err := xdscheck.Validate(b); err != nil {
				t.Fatalf("bootstrap is invalid: %v", err)
			}
			var monitors []string
			for _, m := range b.GetOverloadManager().GetResourceMonitors() {
				monitors = append(monitors, m.GetName())
			}
			if !slices.Equal(monitors, tc.monitors) || (b.GetOverloadManager() == nil) != tc.none {
				t.Errorf("resource monitors %q, want %q", monitors, tc.monitors)
			}
			if m := b.GetOverloadManager().GetResourceMonitors(); tc.connections > 0 {
				cfg := &downstreamconnectionsv3.DownstreamConnectionsConfig{}
				if err := m[len(m)-1].GetTypedConfig().UnmarshalTo(cfg); err != nil || cfg.GetMaxActiveDownstreamConnections() != int64(tc.connections) {
					t.Errorf("connection limit %v (%v), want %d", cfg, err, tc.connections)
				}
			}
			if got := b.GetAdmin().GetIgnoreGlobalConnLimit() && b.GetStaticResources().GetListeners()[0].GetIgnoreGlobalConnLimit(); got != tc.exempt {
				t.Errorf("admin and stats exempt from the connection limit: %v, want %v", got, tc.exempt)
			}
			var v *structpb.Value
			for _, l := range b.GetLayeredRuntime().GetLayers() {
				if f, ok := l.GetStaticLayer().GetFields()["http.max_requests_per_io_cycle"]; ok {
					v = f
				}
			}
			if (v != nil) != tc.runtime || v != nil && v.GetNumberValue() != float64(tc.perCycle) {
				t.Errorf("runtime %v, want http.max_requests_per_io_cycle %d", b.GetLayeredRuntime(), tc.perCycle)
			}
		})
	}
}

// The profile's runtime overrides are in Envoy's static runtime layer,
// beside the requests per I/O cycle; what Envoy would not read as meant is
// refused before Envoy starts.
func TestRuntime(t *testing.T) {
	c := config(t)
	c.MaxRequestsPerIOCycle = 4
	c.Runtime = map[string]string{"envoy.reloadable_features.http1_use_balsa_parser": "false", "overload.premature_reset_min_stream_lifetime_seconds": "2"}
	b, _, err := Build(c)
	if err != nil {
		t.Fatal(err)
	}
	if err := xdscheck.Validate(b); err != nil {
		t.Fatalf("bootstrap is invalid: %v", err)
	}
	fields := b.GetLayeredRuntime().GetLayers()[0].GetStaticLayer().GetFields()
	if len(fields) != 3 || fields["envoy.reloadable_features.http1_use_balsa_parser"].GetStringValue() != "false" ||
		fields["overload.premature_reset_min_stream_lifetime_seconds"].GetStringValue() != "2" || fields["http.max_requests_per_io_cycle"].GetNumberValue() != 4 {
		t.Errorf("static layer %v, want the two overrides and the requests per I/O cycle", fields)
	}
	for _, bad := range []map[string]string{
		{"http.max_requests_per_io_cycle": "1"},
		{"not a key": "1"},
		{"ok.key": "line\nbreak"},
	} {
		c.Runtime = bad
		if _, _, err := Build(c); err == nil {
			t.Errorf("runtime %q: built, want it refused", bad)
		}
	}
}

// The overload-enforced health listener answers /ready alone, on its own
// port, and is counted against the connection limit that the stats
// listener and the admin interface are exempt from: a load balancer that
// checks it sees an Envoy at its limit, the kubelet's probe does not.
func TestOverloadEnforcedHealth(t *testing.T) {
	for _, on := range []bool{false, true} {
		t.Run(fmt.Sprint(on), func(t *testing.T) {
			c := config(t)
			c.MaxDownstreamConnections, c.OMEnforcedHealth = 100, on
			b, _, err := Build(c)
			if err != nil {
				t.Fatal(err)
			}
			if err := xdscheck.Validate(b); err != nil {
				t.Fatalf("bootstrap is invalid: %v", err)
			}
			byPort := map[uint32]*listenerv3.Listener{}
			for _, l := range b.GetStaticResources().GetListeners() {
				byPort[l.GetAddress().GetSocketAddress().GetPortValue()] = l
			}
			if !byPort[ports.EnvoyStats].GetIgnoreGlobalConnLimit() {
				t.Errorf("the stats listener is counted against the connection limit")
			}
			om := byPort[ports.EnvoyOverloadHealth]
			if (om != nil) != on {
				t.Fatalf("listener on %d: %v, want one: %v", ports.EnvoyOverloadHealth, om, on)
			}
			if !on {
				return
			}
			if om.GetIgnoreGlobalConnLimit() {
				t.Errorf("the overload-enforced health listener ignores the connection limit")
			}
			if a := om.GetAddress().GetSocketAddress().GetAddress(); a != "0.0.0.0" {
				t.Errorf("bound to %s, want every interface", a)
			}
			hcm := &hcmv3.HttpConnectionManager{}
			if err := om.GetFilterChains()[0].GetFilters()[0].GetTypedConfig().UnmarshalTo(hcm); err != nil {
				t.Fatal(err)
			}
			var paths []string
			for _, r := range hcm.GetRouteConfig().GetVirtualHosts()[0].GetRoutes() {
				paths = append(paths, r.GetMatch().GetPath()+" -> "+r.GetRoute().GetCluster())
			}
			if want := []string{"/ready -> " + adminCluster}; !slices.Equal(paths, want) {
				t.Errorf("routes %q, want %q", paths, want)
			}
		})
	}
}

// Every bootstrap's last runtime layer is the controller's, over ADS, so
// its keys override the profile's static ones, and a setting served
// through it never needs a new bootstrap.
func TestRuntimeLayerFromController(t *testing.T) {
	for _, static := range []bool{false, true} {
		c := config(t)
		if static {
			c.Runtime = map[string]string{"overload.premature_reset_min_stream_lifetime_seconds": "2"}
		}
		b, _, err := Build(c)
		if err != nil {
			t.Fatal(err)
		}
		if err := xdscheck.Validate(b); err != nil {
			t.Fatalf("bootstrap is invalid: %v", err)
		}
		layers := b.GetLayeredRuntime().GetLayers()
		if len(layers) != map[bool]int{false: 1, true: 2}[static] {
			t.Fatalf("static %v: layers %v", static, layers)
		}
		last := layers[len(layers)-1].GetRtdsLayer()
		if last.GetName() != envoyruntime.Layer || last.GetRtdsConfig().GetAds() == nil {
			t.Errorf("static %v: last layer %v, want RTDS %s over ADS", static, layers[len(layers)-1], envoyruntime.Layer)
		}
	}
}
