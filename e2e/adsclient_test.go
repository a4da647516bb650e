package e2e

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"math"
	"os"
	"sync"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	statuspb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/protobuf/proto"

	"isobar.dev/e2e/harness"
)

// adsClient plays Envoy on one state-of-the-world ADS stream: it subscribes
// to types, hands out each type's responses in order, and answers them with
// an ACK or a NACK as the test decides.
type adsClient struct {
	t      *testing.T
	stream discoveryv3.AggregatedDiscoveryService_StreamAggregatedResourcesClient
	node   *corev3.Node
	byType map[string]chan *discoveryv3.DiscoveryResponse
	errs   chan error
	// acked is the last version acknowledged per type, which a NACK
	// repeats as Envoy does.
	acked map[string]string
	// receivedAt is when each response arrived, before anyone decoded its
	// resources: latencies end there.
	receivedAt sync.Map
}

// received is when r arrived.
func (c *adsClient) received(r *discoveryv3.DiscoveryResponse) time.Time {
	at, _ := c.receivedAt.Load(r)
	return at.(time.Time)
}

// dialXDS connects with the given PKI's client certificate, trusting its CA
// for the server "xds.test".
func dialXDS(t *testing.T, pki *harness.PKI, addr string) *grpc.ClientConn {
	t.Helper()
	caPEM, err := os.ReadFile(pki.CA)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(caPEM)
	cert, err := tls.LoadX509KeyPair(pki.ClientCert, pki.ClientKey)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(credentials.NewTLS(&tls.Config{
		RootCAs: roots, ServerName: "xds.test", Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS13,
	})), grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(math.MaxInt32)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

func newADSClient(t *testing.T, conn *grpc.ClientConn, nodeID, cluster string, types ...string) *adsClient {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	stream, err := discoveryv3.NewAggregatedDiscoveryServiceClient(conn).StreamAggregatedResources(ctx)
	if err != nil {
		t.Fatal(err)
	}
	c := &adsClient{t: t, stream: stream, node: &corev3.Node{Id: nodeID, Cluster: cluster},
		byType: map[string]chan *discoveryv3.DiscoveryResponse{}, errs: make(chan error, 1), acked: map[string]string{}}
	for _, typ := range types {
		c.byType[typ] = make(chan *discoveryv3.DiscoveryResponse, 64)
	}
	go func() {
		for {
			resp, err := stream.Recv()
			if err != nil {
				c.errs <- err
				return
			}
			c.receivedAt.Store(resp, time.Now())
			if ch, ok := c.byType[resp.TypeUrl]; ok {
				ch <- resp
			}
		}
	}()
	for _, typ := range types {
		c.send(&discoveryv3.DiscoveryRequest{TypeUrl: typ})
	}
	return c
}

func (c *adsClient) send(r *discoveryv3.DiscoveryRequest) {
	c.t.Helper()
	r.Node = c.node
	if err := c.stream.Send(r); err != nil {
		c.t.Fatalf("ADS send: %v", err)
	}
}

// next waits for the next response of typ.
func (c *adsClient) next(typ string, timeout time.Duration) *discoveryv3.DiscoveryResponse {
	c.t.Helper()
	select {
	case r := <-c.byType[typ]:
		return r
	case err := <-c.errs:
		c.t.Fatalf("ADS stream ended waiting for %s: %v", typ, err)
	case <-time.After(timeout):
		c.t.Fatalf("no %s response within %s", typ, timeout)
	}
	return nil
}

// pending returns the types with a response not yet taken.
func (c *adsClient) pending() []string {
	var out []string
	for typ, ch := range c.byType {
		if len(ch) > 0 {
			out = append(out, typ)
		}
	}
	return out
}

func (c *adsClient) ack(r *discoveryv3.DiscoveryResponse) {
	c.t.Helper()
	c.acked[r.TypeUrl] = r.VersionInfo
	c.send(&discoveryv3.DiscoveryRequest{TypeUrl: r.TypeUrl, VersionInfo: r.VersionInfo, ResponseNonce: r.Nonce})
}

func (c *adsClient) nack(r *discoveryv3.DiscoveryResponse, message string) {
	c.t.Helper()
	c.send(&discoveryv3.DiscoveryRequest{TypeUrl: r.TypeUrl, VersionInfo: c.acked[r.TypeUrl], ResponseNonce: r.Nonce,
		ErrorDetail: &statuspb.Status{Code: 3, Message: message}})
}

// resources unpacks a response's resources into messages of type T.
func resources[T any, P interface {
	*T
	proto.Message
}](t *testing.T, r *discoveryv3.DiscoveryResponse) []P {
	t.Helper()
	var out []P
	for _, a := range r.Resources {
		m := P(new(T))
		if err := a.UnmarshalTo(m); err != nil {
			t.Fatalf("unpacking %s: %v", a.TypeUrl, err)
		}
		out = append(out, m)
	}
	return out
}
