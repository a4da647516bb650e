package xdsserver

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"math"
	"net"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	statuspb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	"isobar.dev/controller/pkg/offline"
	"isobar.dev/controller/pkg/xds"
)

// serve starts a Server on a loopback port with mutual TLS.
func serve(t *testing.T, pki *testPKI) (*Server, string) { return serveBench(t, pki) }

func serveBench(t testing.TB, pki *testPKI) (*Server, string) {
	t.Helper()
	return serveWith(t, pki, Options{})
}

func serveWith(t testing.TB, pki *testPKI, opts Options) (*Server, string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	s := New(ctx, opts)
	creds, err := ServerTLS(pki.serverCert, pki.serverKy, pki.caCert)
	if err != nil {
		t.Fatal(err)
	}
	g := grpc.NewServer(grpc.Creds(credentials.NewTLS(creds)))
	s.Register(g)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = g.Serve(l) }()
	t.Cleanup(g.Stop)
	return s, l.Addr().String()
}

// dial connects as an Envoy would, with the fleet's client certificate.
func dialBench(t testing.TB, pki *testPKI, addr string) *grpc.ClientConn {
	return dialTB(t, pki, addr, true)
}

func dial(t *testing.T, pki *testPKI, addr string, withCert bool) *grpc.ClientConn {
	return dialTB(t, pki, addr, withCert)
}

func dialTB(t testing.TB, pki *testPKI, addr string, withCert bool) *grpc.ClientConn {
	t.Helper()
	cfg, err := clientTLS(pki)
	if err != nil {
		t.Fatal(err)
	}
	if !withCert {
		cfg.Certificates = nil
	}
	// Route configurations of thousands of routes pass gRPC's default
	// 4 MiB; Envoy's own gRPC client has no limit.
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(credentials.NewTLS(cfg)), grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(math.MaxInt32)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// clientTLS is an Envoy's TLS: it trusts the fleet's CA and presents the
// fleet's client certificate.
func clientTLS(pki *testPKI) (*tls.Config, error) {
	caPEM, err := os.ReadFile(pki.caCert)
	if err != nil {
		return nil, err
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(caPEM)
	cert, err := tls.LoadX509KeyPair(pki.clientCert, pki.clientKy)
	if err != nil {
		return nil, err
	}
	return &tls.Config{RootCAs: roots, ServerName: "xds.test", MinVersion: tls.VersionTLS13, Certificates: []tls.Certificate{cert}}, nil
}

func translated(t *testing.T, file string) *xds.Resources {
	t.Helper()
	r, err := offline.TranslateFiles(file)
	if err != nil {
		t.Fatal(err)
	}
	return r.XDS[0]
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A state-of-the-world ADS client: subscribe, receive, acknowledge, reject,
// and receive only what changed; the server's fleet status follows.
func TestADSStateOfTheWorld(t *testing.T) {
	pki := newTestPKI(t)
	s, addr := serve(t, pki)
	fixture := translated(t, "../offline/testdata/backends.in.yaml")
	if _, err := s.Update(fixture); err != nil {
		t.Fatal(err)
	}
	ads, err := discoveryv3.NewAggregatedDiscoveryServiceClient(dial(t, pki, addr, true)).StreamAggregatedResources(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	node := &corev3.Node{Id: "envoy-1", Cluster: "default/web"}
	send := func(typ, version, nonce string, nack string) {
		t.Helper()
		req := &discoveryv3.DiscoveryRequest{Node: node, TypeUrl: typ, VersionInfo: version, ResponseNonce: nonce}
		if nack != "" {
			req.ErrorDetail = &statuspb.Status{Code: 3, Message: nack}
		}
		if err := ads.Send(req); err != nil {
			t.Fatal(err)
		}
	}
	recv := func() *discoveryv3.DiscoveryResponse {
		t.Helper()
		resp, err := ads.Recv()
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}

	send(resourcev3.ClusterType, "", "", "")
	cds := recv()
	if cds.TypeUrl != resourcev3.ClusterType || len(cds.Resources) != len(fixture.Clusters) {
		t.Fatalf("CDS response: type %s with %d resources, want %d clusters", cds.TypeUrl, len(cds.Resources), len(fixture.Clusters))
	}
	waitFor(t, "the stream to show as not yet acknowledged", func() bool { st := s.Status(); return st.Connected == 1 && !st.Acknowledged })
	send(resourcev3.ClusterType, cds.VersionInfo, cds.Nonce, "")
	waitFor(t, "the ACK", func() bool { return s.Status().Acknowledged })

	send(resourcev3.ListenerType, "", "", "")
	lds := recv()
	send(resourcev3.ListenerType, "", lds.Nonce, "listener http_80: invalid filter")
	waitFor(t, "the NACK", func() bool {
		st := s.Status()
		return !st.Acknowledged && len(st.Rejections) == 1 && strings.Contains(st.Rejections[0], "envoy-1") && strings.Contains(st.Rejections[0], "invalid filter")
	})

	// Removing a cluster (and its endpoints, as a consistent set must)
	// pushes a new CDS version.
	r := translated(t, "../offline/testdata/backends.in.yaml")
	gone := r.Clusters[0]
	r.Clusters = r.Clusters[1:]
	r.Endpoints = slices.DeleteFunc(slices.Clone(r.Endpoints), func(e *endpointv3.ClusterLoadAssignment) bool { return e.ClusterName == gone.Name })
	changed, err := s.Update(r)
	if err != nil || changed != 2 {
		t.Fatalf("Update changed %d resources (%v), want 2", changed, err)
	}
	// A rejected type may be sent again first (the NACK named no newer
	// version); the cluster change must follow.
	cds2 := recv()
	for cds2.TypeUrl == resourcev3.ListenerType {
		cds2 = recv()
	}
	if cds2.TypeUrl != resourcev3.ClusterType || len(cds2.Resources) != len(fixture.Clusters)-1 || cds2.VersionInfo == cds.VersionInfo {
		t.Fatalf("after removing a cluster: %s version %s with %d resources", cds2.TypeUrl, cds2.VersionInfo, len(cds2.Resources))
	}
	if changed, _ := s.Update(r); changed != 0 {
		t.Errorf("an identical update changed %d resources", changed)
	}
}

// Delta xDS acknowledges by nonce, and sends only changed resources.
func TestADSDelta(t *testing.T) {
	pki := newTestPKI(t)
	s, addr := serve(t, pki)
	if _, err := s.Update(translated(t, "../offline/testdata/backends.in.yaml")); err != nil {
		t.Fatal(err)
	}
	ads, err := discoveryv3.NewAggregatedDiscoveryServiceClient(dial(t, pki, addr, true)).DeltaAggregatedResources(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	node := &corev3.Node{Id: "envoy-2"}
	if err := ads.Send(&discoveryv3.DeltaDiscoveryRequest{Node: node, TypeUrl: resourcev3.EndpointType, ResourceNamesSubscribe: []string{"*"}}); err != nil {
		t.Fatal(err)
	}
	resp, err := ads.Recv()
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Resources) != 3 {
		t.Fatalf("EDS delta: %d resources, want 3", len(resp.Resources))
	}
	if err := ads.Send(&discoveryv3.DeltaDiscoveryRequest{Node: node, TypeUrl: resourcev3.EndpointType, ResponseNonce: resp.Nonce}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the delta ACK", func() bool { st := s.Status(); return st.Connected == 1 && st.Acknowledged })

	r := translated(t, "../offline/testdata/backends.in.yaml")
	r.Endpoints[0].Endpoints = nil
	if _, err := s.Update(r); err != nil {
		t.Fatal(err)
	}
	resp, err = ads.Recv()
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Resources) != 1 || resp.Resources[0].Name != r.Endpoints[0].ClusterName {
		t.Fatalf("after one endpoint change: %d resources, want only %s", len(resp.Resources), r.Endpoints[0].ClusterName)
	}
	if st := s.Status(); st.Acknowledged {
		t.Error("acknowledged before the client answered the new version")
	}
}

// An Envoy without the fleet's client certificate cannot connect.
func TestClientCertificateRequired(t *testing.T) {
	pki := newTestPKI(t)
	_, addr := serve(t, pki)
	ads, err := discoveryv3.NewAggregatedDiscoveryServiceClient(dial(t, pki, addr, false)).StreamAggregatedResources(context.Background())
	if err == nil {
		if err = ads.Send(&discoveryv3.DiscoveryRequest{TypeUrl: resourcev3.ClusterType}); err == nil {
			_, err = ads.Recv()
		}
	}
	if err == nil {
		t.Fatal("a client without a certificate got a response")
	}
}

// A set go-control-plane finds inconsistent is refused and the fleet keeps
// what it had; a later consistent set is served.
func TestUpdateRefusesInconsistentSets(t *testing.T) {
	s := New(context.Background(), Options{})
	good := translated(t, "../offline/testdata/backends.in.yaml")
	if _, err := s.Update(good); err != nil {
		t.Fatal(err)
	}
	before := s.version(resourcev3.ClusterType)
	bad := *good
	bad.Endpoints = bad.Endpoints[1:] // a cluster without its assignment
	bad.Clusters = append([]*clusterv3.Cluster(nil), good.Clusters...)
	bad.Clusters[0] = proto.Clone(good.Clusters[0]).(*clusterv3.Cluster)
	bad.Clusters[0].ConnectTimeout = durationpb.New(7 * time.Second)
	if _, err := s.Update(&bad); err == nil || !strings.Contains(err.Error(), "consistent") {
		t.Fatalf("an inconsistent set: %v", err)
	}
	if s.version(resourcev3.ClusterType) != before {
		t.Error("the refused set changed what is served")
	}
	if changed, err := s.Update(good); err != nil || changed != 0 {
		t.Errorf("the served set again: %d changed, %v", changed, err)
	}
}

// Fleet status asks of each stream only what it subscribes to: a change
// or removal of a resource a state-of-the-world stream does not ask for is
// never sent to it, and must not leave it unacknowledged forever.
func TestStatusFollowsSubscriptions(t *testing.T) {
	pki := newTestPKI(t)
	s, addr := serve(t, pki)
	r := translated(t, "../offline/testdata/backends.in.yaml")
	if _, err := s.Update(r); err != nil {
		t.Fatal(err)
	}
	ads, err := discoveryv3.NewAggregatedDiscoveryServiceClient(dial(t, pki, addr, true)).StreamAggregatedResources(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	node := &corev3.Node{Id: "envoy-3"}
	mine, other := r.Endpoints[0].ClusterName, r.Endpoints[1].ClusterName
	var last *discoveryv3.DiscoveryResponse
	ask := func(names ...string) {
		t.Helper()
		req := &discoveryv3.DiscoveryRequest{Node: node, TypeUrl: resourcev3.EndpointType, ResourceNames: names}
		if last != nil {
			req.VersionInfo, req.ResponseNonce = last.VersionInfo, last.Nonce
		}
		if err := ads.Send(req); err != nil {
			t.Fatal(err)
		}
	}
	receive := func() {
		t.Helper()
		var err error
		if last, err = ads.Recv(); err != nil {
			t.Fatal(err)
		}
	}
	acknowledged := func() bool { st := s.Status(); return st.Connected == 1 && st.Acknowledged }

	ask(mine)
	receive()
	ask(mine) // the ACK
	waitFor(t, "the ACK", acknowledged)

	changeEndpoints := func(cluster string) {
		t.Helper()
		cla := proto.Clone(r.Endpoints[slices.IndexFunc(r.Endpoints, func(e *endpointv3.ClusterLoadAssignment) bool { return e.ClusterName == cluster })]).(*endpointv3.ClusterLoadAssignment)
		cla.Endpoints = []*endpointv3.LocalityLbEndpoints{{LbEndpoints: []*endpointv3.LbEndpoint{{HostIdentifier: &endpointv3.LbEndpoint_Endpoint{
			Endpoint: &endpointv3.Endpoint{Address: &corev3.Address{Address: &corev3.Address_SocketAddress{SocketAddress: &corev3.SocketAddress{
				Address: "10.9.9.9", PortSpecifier: &corev3.SocketAddress_PortValue{PortValue: uint32(8000 + len(cluster))}}}}},
		}}}}}
		if n, err := s.UpdateEndpoints([]*endpointv3.ClusterLoadAssignment{cla}); err != nil || n != 1 {
			t.Fatalf("UpdateEndpoints changed %d (%v), want 1", n, err)
		}
	}
	changeEndpoints(other)
	if !acknowledged() {
		t.Fatal("a change to a cluster the stream does not subscribe to left it unacknowledged")
	}
	changeEndpoints(mine)
	if acknowledged() {
		t.Fatal("acknowledged before the stream was sent its cluster's change")
	}
	receive()
	ask(mine)
	waitFor(t, "the ACK of the change", acknowledged)

	// Removing the stream's cluster: Envoy stops asking for it once CDS
	// no longer has it, whether or not the cache answered the removal.
	r.Clusters = slices.DeleteFunc(slices.Clone(r.Clusters), func(c *clusterv3.Cluster) bool { return c.Name == mine })
	r.Endpoints = slices.DeleteFunc(slices.Clone(r.Endpoints), func(e *endpointv3.ClusterLoadAssignment) bool { return e.ClusterName == mine })
	if _, err := s.Update(r); err != nil {
		t.Fatal(err)
	}
	if acknowledged() {
		t.Fatal("acknowledged before the stream saw its cluster go")
	}
	ask()
	waitFor(t, "the stream that no longer asks for the removed cluster", acknowledged)
}
