// Package bootstrap writes Envoy's bootstrap for a fleet: the one place that
// knows how an Envoy of a Gateway reaches its controller. The operator runs
// `isobar-controller bootstrap` in each Envoy pod's init container, which
// writes three files into a shared volume: the bootstrap itself and two
// file-based SDS resources for the xDS client certificate and the CA that
// verifies the controller. Envoy watches the certificate directory, so
// rotated certificates (a Secret volume swaps a symlink) take effect without a
// restart.
package bootstrap

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	overloadv3 "github.com/envoyproxy/go-control-plane/envoy/config/overload/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	routerv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	downstreamconnectionsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/resource_monitors/downstream_connections/v3"
	fixedheapv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/resource_monitors/fixed_heap/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	upstreamhttpv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/upstreams/http/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/structpb"

	"isobar.dev/api/envoyruntime"
	"isobar.dev/api/fleet"
	"isobar.dev/api/ports"
)

// Config describes one Envoy of a fleet.
type Config struct {
	// NodeID identifies this Envoy to the controller (the pod name);
	// Cluster names the fleet (the Gateway, "namespace/name").
	NodeID  string
	Cluster string
	// XDSAddress is the controller Service's DNS name, and XDSServerName
	// the name its certificate must carry.
	XDSAddress    string
	XDSServerName string
	// CertsDir holds tls.crt and tls.key (Envoy's client certificate) and
	// ca.crt (the fleet's CA), as a Secret volume does.
	CertsDir string
	// OutputDir receives envoy.json and the SDS files; Envoy reads them
	// from the same path.
	OutputDir string
	// MaxHeapBytes, when not zero, turns on the overload manager.
	MaxHeapBytes uint64
	// MaxDownstreamConnections, when not zero, is how many client
	// connections Envoy holds at once over all its listeners; the admin
	// and stats listeners (probes, metrics) are not counted nor refused.
	MaxDownstreamConnections uint64
	// OMEnforcedHealth opens a second /ready, on its own port, that the
	// connection limit counts and refuses: a load balancer's health check
	// then sees an Envoy at its limit, while the kubelet's probe of the
	// stats listener does not.
	OMEnforcedHealth bool
	// MaxRequestsPerIOCycle, when not zero, bounds how many requests of
	// its connections' streams Envoy processes in one event loop
	// iteration (runtime key http.max_requests_per_io_cycle): a
	// mitigation of HTTP/2 rapid reset floods.
	MaxRequestsPerIOCycle uint32
	// Runtime are Envoy runtime keys and their values, in the static
	// layer with MaxRequestsPerIOCycle (envoyruntime.Check).
	Runtime map[string]string
}

// File names in OutputDir.
const (
	BootstrapFile        = "envoy.json"
	sdsCertificateFile   = "xds-tls-certificate.json"
	sdsValidationCtxFile = "xds-validation-context.json"

	xdsCluster   = "isobar_xds"
	adminCluster = "isobar_admin"
	statsName    = "isobar_stats"
	omHealthName = "isobar_om_health"
)

func (c Config) validate() error {
	var errs []error
	for name, v := range map[string]string{"node id": c.NodeID, "cluster": c.Cluster, "xDS address": c.XDSAddress,
		"xDS server name": c.XDSServerName, "certificates directory": c.CertsDir, "output directory": c.OutputDir} {
		if v == "" {
			errs = append(errs, fmt.Errorf("%s is required", name))
		}
	}
	return errors.Join(errs...)
}

// Build returns the bootstrap and the two SDS files' contents.
func Build(c Config) (*bootstrapv3.Bootstrap, map[string]proto.Message, error) {
	if err := c.validate(); err != nil {
		return nil, nil, err
	}
	b := &bootstrapv3.Bootstrap{
		Node: &corev3.Node{Id: c.NodeID, Cluster: c.Cluster},
		Admin: &bootstrapv3.Admin{
			Address: socket("127.0.0.1", ports.EnvoyAdmin),
		},
		DynamicResources: &bootstrapv3.Bootstrap_DynamicResources{
			AdsConfig: &corev3.ApiConfigSource{
				ApiType:             corev3.ApiConfigSource_DELTA_GRPC,
				TransportApiVersion: corev3.ApiVersion_V3,
				GrpcServices: []*corev3.GrpcService{{TargetSpecifier: &corev3.GrpcService_EnvoyGrpc_{
					EnvoyGrpc: &corev3.GrpcService_EnvoyGrpc{ClusterName: xdsCluster},
				}}},
				SetNodeOnFirstMessageOnly: true,
			},
			LdsConfig: ads(),
			CdsConfig: ads(),
		},
		StaticResources: &bootstrapv3.Bootstrap_StaticResources{
			Clusters:  []*clusterv3.Cluster{xdsClusterFor(c), adminClusterFor()},
			Listeners: []*listenerv3.Listener{adminListener(statsName, ports.EnvoyStats, "/ready", "/stats/prometheus")},
		},
	}
	if c.OMEnforcedHealth {
		b.StaticResources.Listeners = append(b.StaticResources.Listeners, adminListener(omHealthName, ports.EnvoyOverloadHealth, "/ready"))
	}
	b.OverloadManager = overloadManager(c.MaxHeapBytes, c.MaxDownstreamConnections)
	if c.MaxDownstreamConnections > 0 {
		b.Admin.IgnoreGlobalConnLimit = true
		b.StaticResources.Listeners[0].IgnoreGlobalConnLimit = true
	}
	if err := envoyruntime.Check(c.Runtime); err != nil {
		return nil, nil, err
	}
	b.LayeredRuntime = &bootstrapv3.LayeredRuntime{}
	if c.MaxRequestsPerIOCycle > 0 || len(c.Runtime) > 0 {
		fields := make(map[string]*structpb.Value, len(c.Runtime)+1)
		for k, v := range c.Runtime {
			fields[k] = structpb.NewStringValue(v)
		}
		if c.MaxRequestsPerIOCycle > 0 {
			fields[envoyruntime.MaxRequestsPerIOCycle] = structpb.NewNumberValue(float64(c.MaxRequestsPerIOCycle))
		}
		b.LayeredRuntime.Layers = append(b.LayeredRuntime.Layers, &bootstrapv3.RuntimeLayer{
			Name:           "static",
			LayerSpecifier: &bootstrapv3.RuntimeLayer_StaticLayer{StaticLayer: &structpb.Struct{Fields: fields}},
		})
	}
	// The controller's layer, last so that its keys win. Every bootstrap
	// has it, so a profile setting served through it never needs a new
	// bootstrap; the controller serves it to every Envoy, empty when no
	// setting sets a key.
	b.LayeredRuntime.Layers = append(b.LayeredRuntime.Layers, &bootstrapv3.RuntimeLayer{
		Name: envoyruntime.Layer,
		LayerSpecifier: &bootstrapv3.RuntimeLayer_RtdsLayer_{RtdsLayer: &bootstrapv3.RuntimeLayer_RtdsLayer{
			Name: envoyruntime.Layer, RtdsConfig: ads(),
		}},
	})
	sds := map[string]proto.Message{
		sdsCertificateFile: discovery(&tlsv3.Secret{Name: "isobar_xds_certificate", Type: &tlsv3.Secret_TlsCertificate{TlsCertificate: &tlsv3.TlsCertificate{
			CertificateChain: file(filepath.Join(c.CertsDir, fleet.CertKey)),
			PrivateKey:       file(filepath.Join(c.CertsDir, fleet.KeyKey)),
			WatchedDirectory: &corev3.WatchedDirectory{Path: c.CertsDir},
		}}}),
		sdsValidationCtxFile: discovery(&tlsv3.Secret{Name: "isobar_xds_ca", Type: &tlsv3.Secret_ValidationContext{ValidationContext: &tlsv3.CertificateValidationContext{
			TrustedCa:        file(filepath.Join(c.CertsDir, fleet.CAKey)),
			WatchedDirectory: &corev3.WatchedDirectory{Path: c.CertsDir},
			MatchTypedSubjectAltNames: []*tlsv3.SubjectAltNameMatcher{{
				SanType: tlsv3.SubjectAltNameMatcher_DNS,
				Matcher: &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_Exact{Exact: c.XDSServerName}},
			}},
		}}}),
	}
	return b, sds, nil
}

// Write builds the bootstrap and writes its files into c.OutputDir.
func Write(c Config) error {
	b, sds, err := Build(c)
	if err != nil {
		return err
	}
	files := map[string]proto.Message{BootstrapFile: b}
	for name, m := range sds {
		files[name] = m
	}
	if err := os.MkdirAll(c.OutputDir, 0o755); err != nil {
		return fmt.Errorf("creating %s: %w", c.OutputDir, err)
	}
	for name, m := range files {
		data, err := protojson.MarshalOptions{Multiline: true}.Marshal(m)
		if err != nil {
			return fmt.Errorf("encoding %s: %w", name, err)
		}
		// Written beside and renamed, so Envoy never reads half a file.
		path := filepath.Join(c.OutputDir, name)
		if err := os.WriteFile(path+".tmp", data, 0o644); err != nil {
			return err
		}
		if err := os.Rename(path+".tmp", path); err != nil {
			return err
		}
	}
	return nil
}

func ads() *corev3.ConfigSource {
	return &corev3.ConfigSource{
		ResourceApiVersion:    corev3.ApiVersion_V3,
		ConfigSourceSpecifier: &corev3.ConfigSource_Ads{Ads: &corev3.AggregatedConfigSource{}},
	}
}

func socket(address string, port uint32) *corev3.Address {
	return &corev3.Address{Address: &corev3.Address_SocketAddress{SocketAddress: &corev3.SocketAddress{
		Address: address, PortSpecifier: &corev3.SocketAddress_PortValue{PortValue: port},
	}}}
}

func file(path string) *corev3.DataSource {
	return &corev3.DataSource{Specifier: &corev3.DataSource_Filename{Filename: path}}
}

func typed(m proto.Message) *anypb.Any {
	a, err := anypb.New(m)
	if err != nil {
		panic(err)
	}
	return a
}

func discovery(s *tlsv3.Secret) proto.Message {
	return &discoveryv3.DiscoveryResponse{Resources: []*anypb.Any{typed(s)}}
}

// sdsFile is how the xDS cluster reads a secret from a file that Envoy
// watches.
func sdsFile(name, path string) *tlsv3.SdsSecretConfig {
	return &tlsv3.SdsSecretConfig{Name: name, SdsConfig: &corev3.ConfigSource{
		ResourceApiVersion: corev3.ApiVersion_V3,
		ConfigSourceSpecifier: &corev3.ConfigSource_PathConfigSource{PathConfigSource: &corev3.PathConfigSource{
			Path:             path,
			WatchedDirectory: &corev3.WatchedDirectory{Path: filepath.Dir(path)},
		}},
	}}
}

// xdsClusterFor is the controller: HTTP/2 (gRPC) over mutual TLS, every
// replica behind the Service's DNS name.
func xdsClusterFor(c Config) *clusterv3.Cluster {
	tlsCtx := &tlsv3.UpstreamTlsContext{
		Sni: c.XDSServerName,
		CommonTlsContext: &tlsv3.CommonTlsContext{
			TlsParams:                      &tlsv3.TlsParameters{TlsMinimumProtocolVersion: tlsv3.TlsParameters_TLSv1_3},
			TlsCertificateSdsSecretConfigs: []*tlsv3.SdsSecretConfig{sdsFile("isobar_xds_certificate", filepath.Join(c.OutputDir, sdsCertificateFile))},
			ValidationContextType: &tlsv3.CommonTlsContext_ValidationContextSdsSecretConfig{
				ValidationContextSdsSecretConfig: sdsFile("isobar_xds_ca", filepath.Join(c.OutputDir, sdsValidationCtxFile)),
			},
		},
	}
	return &clusterv3.Cluster{
		Name:                 xdsCluster,
		ClusterDiscoveryType: &clusterv3.Cluster_Type{Type: clusterv3.Cluster_STRICT_DNS},
		ConnectTimeout:       durationpb.New(5 * time.Second),
		LoadAssignment: &endpointv3.ClusterLoadAssignment{ClusterName: xdsCluster, Endpoints: []*endpointv3.LocalityLbEndpoints{{
			LbEndpoints: []*endpointv3.LbEndpoint{{HostIdentifier: &endpointv3.LbEndpoint_Endpoint{Endpoint: &endpointv3.Endpoint{
				Address: socket(c.XDSAddress, ports.XDS),
			}}}},
		}}},
		TypedExtensionProtocolOptions: map[string]*anypb.Any{
			"envoy.extensions.upstreams.http.v3.HttpProtocolOptions": typed(&upstreamhttpv3.HttpProtocolOptions{
				UpstreamProtocolOptions: &upstreamhttpv3.HttpProtocolOptions_ExplicitHttpConfig_{ExplicitHttpConfig: &upstreamhttpv3.HttpProtocolOptions_ExplicitHttpConfig{
					ProtocolConfig: &upstreamhttpv3.HttpProtocolOptions_ExplicitHttpConfig_Http2ProtocolOptions{Http2ProtocolOptions: &corev3.Http2ProtocolOptions{
						// Keepalives find a dead controller before TCP does.
						ConnectionKeepalive: &corev3.KeepaliveSettings{Interval: durationpb.New(30 * time.Second), Timeout: durationpb.New(5 * time.Second)},
					}},
				}},
			}),
		},
		TransportSocket: &corev3.TransportSocket{Name: "envoy.transport_sockets.tls", ConfigType: &corev3.TransportSocket_TypedConfig{TypedConfig: typed(tlsCtx)}},
	}
}

func adminClusterFor() *clusterv3.Cluster {
	return &clusterv3.Cluster{
		Name:                 adminCluster,
		ClusterDiscoveryType: &clusterv3.Cluster_Type{Type: clusterv3.Cluster_STATIC},
		ConnectTimeout:       durationpb.New(time.Second),
		LoadAssignment: &endpointv3.ClusterLoadAssignment{ClusterName: adminCluster, Endpoints: []*endpointv3.LocalityLbEndpoints{{
			LbEndpoints: []*endpointv3.LbEndpoint{{HostIdentifier: &endpointv3.LbEndpoint_Endpoint{Endpoint: &endpointv3.Endpoint{
				Address: socket("127.0.0.1", ports.EnvoyAdmin),
			}}}},
		}}},
	}
}

// adminListener exposes admin paths on all interfaces: the stats listener
// /ready for the kubelet's readiness probe and /stats/prometheus, the
// overload-enforced health listener /ready alone. The rest of the admin
// interface stays on loopback.
func adminListener(name string, port uint32, paths ...string) *listenerv3.Listener {
	routes := make([]*routev3.Route, 0, len(paths))
	for _, p := range paths {
		routes = append(routes, &routev3.Route{
			Match:  &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Path{Path: p}},
			Action: &routev3.Route_Route{Route: &routev3.RouteAction{ClusterSpecifier: &routev3.RouteAction_Cluster{Cluster: adminCluster}}},
		})
	}
	hcm := &hcmv3.HttpConnectionManager{
		StatPrefix: name,
		RouteSpecifier: &hcmv3.HttpConnectionManager_RouteConfig{RouteConfig: &routev3.RouteConfiguration{
			VirtualHosts: []*routev3.VirtualHost{{Name: name, Domains: []string{"*"}, Routes: routes}},
		}},
		HttpFilters: []*hcmv3.HttpFilter{{Name: "envoy.filters.http.router", ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: typed(&routerv3.Router{})}}},
	}
	return &listenerv3.Listener{
		Name:    name,
		Address: socket("0.0.0.0", port),
		FilterChains: []*listenerv3.FilterChain{{Filters: []*listenerv3.Filter{{
			Name: "envoy.filters.network.http_connection_manager", ConfigType: &listenerv3.Filter_TypedConfig{TypedConfig: typed(hcm)},
		}}}},
	}
}

// overloadManager shrinks the heap at 95% of maxHeap and stops accepting
// requests at 98%, rather than letting the kernel kill Envoy; and refuses
// client connections beyond maxConnections. Nil when neither is set.
func overloadManager(maxHeap, maxConnections uint64) *overloadv3.OverloadManager {
	if maxHeap == 0 && maxConnections == 0 {
		return nil
	}
	out := &overloadv3.OverloadManager{RefreshInterval: durationpb.New(250 * time.Millisecond)}
	if maxHeap > 0 {
		const monitor = "envoy.resource_monitors.fixed_heap"
		threshold := func(v float64) *overloadv3.Trigger {
			return &overloadv3.Trigger{Name: monitor, TriggerOneof: &overloadv3.Trigger_Threshold{Threshold: &overloadv3.ThresholdTrigger{Value: v}}}
		}
		out.ResourceMonitors = append(out.ResourceMonitors, &overloadv3.ResourceMonitor{
			Name:       monitor,
			ConfigType: &overloadv3.ResourceMonitor_TypedConfig{TypedConfig: typed(&fixedheapv3.FixedHeapConfig{MaxHeapSizeBytes: maxHeap})},
		})
		out.Actions = []*overloadv3.OverloadAction{
			{Name: "envoy.overload_actions.shrink_heap", Triggers: []*overloadv3.Trigger{threshold(0.95)}},
			{Name: "envoy.overload_actions.stop_accepting_requests", Triggers: []*overloadv3.Trigger{threshold(0.98)}},
		}
	}
	if maxConnections > 0 {
		// A proactive monitor: Envoy checks it as it accepts, and needs
		// no action to refuse.
		out.ResourceMonitors = append(out.ResourceMonitors, &overloadv3.ResourceMonitor{
			Name: "envoy.resource_monitors.global_downstream_max_connections",
			ConfigType: &overloadv3.ResourceMonitor_TypedConfig{TypedConfig: typed(&downstreamconnectionsv3.DownstreamConnectionsConfig{
				MaxActiveDownstreamConnections: int64(min(maxConnections, 1<<62)),
			})},
		})
	}
	return out
}
