// Package dataplane plays Envoy where no Envoy binary exists: a process
// that reads the bootstrap our init container wrote, connects to the xDS
// server it names with the certificates it names, subscribes over delta ADS
// as Envoy does (clusters and listeners by wildcard, then the endpoints,
// routes and secrets they refer to, by name), ACKs what it applies, and
// answers requests with envoysim over exactly what it was sent.
package dataplane

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"time"

	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	"isobar.dev/api/envoyrelease"
	"isobar.dev/api/imagetag"

	// The bootstrap's typed configurations, which protojson must resolve.
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/resource_monitors/downstream_connections/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/resource_monitors/fixed_heap/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/upstreams/http/v3"
)

// Bootstrap is what a simulated Envoy takes from its bootstrap file.
type Bootstrap struct {
	Node *corev3.Node
	// Release is the Envoy release played: reported in the node, as
	// Envoy reports its own, and what it knows of what it is sent. Unset,
	// it is envoyrelease.Newest.
	Release imagetag.Version
	// Delta is whether ADS is delta (DELTA_GRPC) rather than state of the
	// world.
	Delta bool
	// Address is the xDS server's host and port, as the xDS cluster names
	// it (a DNS name the caller resolves).
	Address string
	// TLS is the client configuration the xDS cluster's transport socket
	// describes: its certificate, trusted CA, SNI and minimum version.
	TLS *tls.Config
	// Runtime are the bootstrap's runtime layers, in order: a later
	// layer's key overrides an earlier one's.
	Runtime []RuntimeLayer
}

// RuntimeLayer is a layer of Envoy's runtime: a static layer's keys, or
// the name of an RTDS layer, which Envoy subscribes to over ADS before it
// asks for clusters, and waits for up to InitialFetchTimeout.
type RuntimeLayer struct {
	Static              map[string]*structpb.Value
	RTDS                string
	InitialFetchTimeout time.Duration
}

// runtimeLayers reads the bootstrap's layered runtime: static layers and
// RTDS layers over ADS, the kinds our bootstraps write.
func runtimeLayers(b *bootstrapv3.Bootstrap) ([]RuntimeLayer, error) {
	var out []RuntimeLayer
	for _, l := range b.GetLayeredRuntime().GetLayers() {
		switch {
		case l.GetStaticLayer() != nil:
			out = append(out, RuntimeLayer{Static: l.GetStaticLayer().GetFields()})
		case l.GetRtdsLayer() != nil:
			r := l.GetRtdsLayer()
			if r.GetRtdsConfig().GetAds() == nil {
				return nil, fmt.Errorf("runtime layer %s: RTDS must come over ADS", l.GetName())
			}
			timeout := 15 * time.Second // Envoy's default initial_fetch_timeout
			if t := r.GetRtdsConfig().GetInitialFetchTimeout(); t != nil {
				timeout = t.AsDuration()
			}
			out = append(out, RuntimeLayer{RTDS: r.GetName(), InitialFetchTimeout: timeout})
		default:
			return nil, fmt.Errorf("runtime layer %s: only static and RTDS layers are played", l.GetName())
		}
	}
	return out, nil
}

// release is the release played: Release, or the newest when unset.
func (b *Bootstrap) release() imagetag.Version {
	if b.Release == (imagetag.Version{}) {
		return envoyrelease.Newest
	}
	return b.Release
}

// ReadBootstrap reads an Envoy bootstrap file and the SDS files it points
// to for the xDS cluster's certificates. The bootstrap names paths as the
// Envoy container mounts them; local maps such a path to where the file is
// on this machine.
func ReadBootstrap(path string, local func(string) string) (*Bootstrap, error) {
	b := &bootstrapv3.Bootstrap{}
	if err := readJSON(path, b); err != nil {
		return nil, err
	}
	ads := b.GetDynamicResources().GetAdsConfig()
	if ads == nil || len(ads.GetGrpcServices()) != 1 || ads.GetGrpcServices()[0].GetEnvoyGrpc() == nil {
		return nil, fmt.Errorf("%s: ADS must name one envoy_grpc cluster", path)
	}
	name := ads.GetGrpcServices()[0].GetEnvoyGrpc().GetClusterName()
	out := &Bootstrap{Node: b.GetNode(), Delta: ads.GetApiType() == corev3.ApiConfigSource_DELTA_GRPC}
	var err error
	if out.Runtime, err = runtimeLayers(b); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	for _, c := range b.GetStaticResources().GetClusters() {
		if c.GetName() != name {
			continue
		}
		eps := c.GetLoadAssignment().GetEndpoints()
		if len(eps) != 1 || len(eps[0].GetLbEndpoints()) != 1 {
			return nil, fmt.Errorf("%s: the xDS cluster %s must have one endpoint", path, name)
		}
		sa := eps[0].GetLbEndpoints()[0].GetEndpoint().GetAddress().GetSocketAddress()
		out.Address = net.JoinHostPort(sa.GetAddress(), strconv.Itoa(int(sa.GetPortValue())))
		ts := &tlsv3.UpstreamTlsContext{}
		if err := c.GetTransportSocket().GetTypedConfig().UnmarshalTo(ts); err != nil {
			return nil, fmt.Errorf("%s: the xDS cluster's transport socket: %w", path, err)
		}
		cfg, err := clientTLS(ts, local)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		out.TLS = cfg
		return out, nil
	}
	return nil, fmt.Errorf("%s: no static cluster %s for ADS", path, name)
}

// clientTLS builds the xDS client's TLS from the UpstreamTlsContext, whose
// certificate and CA come from SDS files as Envoy reads them.
func clientTLS(ts *tlsv3.UpstreamTlsContext, local func(string) string) (*tls.Config, error) {
	common := ts.GetCommonTlsContext()
	if len(common.GetTlsCertificateSdsSecretConfigs()) != 1 || common.GetValidationContextSdsSecretConfig() == nil {
		return nil, errors.New("the xDS cluster must take one certificate and a validation context from SDS files")
	}
	certSecret, err := fileSecret(common.GetTlsCertificateSdsSecretConfigs()[0], local)
	if err != nil {
		return nil, err
	}
	caSecret, err := fileSecret(common.GetValidationContextSdsSecretConfig(), local)
	if err != nil {
		return nil, err
	}
	tc := certSecret.GetTlsCertificate()
	cert, err := tls.LoadX509KeyPair(local(tc.GetCertificateChain().GetFilename()), local(tc.GetPrivateKey().GetFilename()))
	if err != nil {
		return nil, err
	}
	vc := caSecret.GetValidationContext()
	caPEM, err := os.ReadFile(local(vc.GetTrustedCa().GetFilename()))
	if err != nil {
		return nil, err
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(caPEM) {
		return nil, fmt.Errorf("%s holds no CA certificate", vc.GetTrustedCa().GetFilename())
	}
	// Envoy checks the server's SAN against the validation context; Go's
	// ServerName check is the same when the SAN asked for is the SNI.
	for _, m := range vc.GetMatchTypedSubjectAltNames() {
		if m.GetSanType() != tlsv3.SubjectAltNameMatcher_DNS || m.GetMatcher().GetExact() != ts.GetSni() {
			return nil, fmt.Errorf("the xDS validation context matches %v, which is not the SNI %q", m, ts.GetSni())
		}
	}
	minVersion := uint16(tls.VersionTLS12)
	if common.GetTlsParams().GetTlsMinimumProtocolVersion() == tlsv3.TlsParameters_TLSv1_3 {
		minVersion = tls.VersionTLS13
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}, RootCAs: roots, ServerName: ts.GetSni(), MinVersion: minVersion}, nil
}

// fileSecret reads the one Secret of an SDS path config source.
func fileSecret(c *tlsv3.SdsSecretConfig, local func(string) string) (*tlsv3.Secret, error) {
	path := c.GetSdsConfig().GetPathConfigSource().GetPath()
	if path == "" {
		return nil, fmt.Errorf("SDS secret %s is not read from a file", c.GetName())
	}
	path = local(path)
	resp := &discoveryv3.DiscoveryResponse{}
	if err := readJSON(path, resp); err != nil {
		return nil, err
	}
	for _, a := range resp.GetResources() {
		s := &tlsv3.Secret{}
		if err := a.UnmarshalTo(s); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if s.GetName() == c.GetName() {
			return s, nil
		}
	}
	return nil, fmt.Errorf("%s has no secret %s", path, c.GetName())
}

func readJSON(path string, into proto.Message) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := protojson.Unmarshal(data, into); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}
