package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"math"
	"sync"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/protobuf/proto"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"isobar.dev/api/fleet"
	"isobar.dev/controller/pkg/envoysim"
)

var envoyTypes = []string{resourcev3.ListenerType, resourcev3.RouteType, resourcev3.ClusterType, resourcev3.EndpointType, resourcev3.SecretType}

// simulatedEnvoy is the demo's stand-in for Envoy: an ADS client with the
// fleet's client certificate that acknowledges every response and keeps
// the latest resources, which envoysim then interprets.
type simulatedEnvoy struct {
	conn   *grpc.ClientConn
	cancel context.CancelFunc

	mu        sync.Mutex
	resources map[string][]proto.Message
	err       error
}

// connectEnvoy connects to the controller's xDS port as an Envoy pod of
// the fleet would, trusting the fleet's CA for the controller Service's
// name.
func (d *demo) connectEnvoy(ctx context.Context) error {
	s := &corev1.Secret{}
	if err := d.env.Client.Get(ctx, types.NamespacedName{Namespace: sampleGateway.Namespace, Name: d.names.EnvoyCerts}, s); err != nil {
		return err
	}
	cert, err := tls.X509KeyPair(s.Data[fleet.CertKey], s.Data[fleet.KeyKey])
	if err != nil {
		return err
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(s.Data[fleet.CAKey]) {
		return errors.New("the Envoy certificate Secret has no CA")
	}
	conn, err := grpc.NewClient(d.xdsAddress, grpc.WithTransportCredentials(credentials.NewTLS(&tls.Config{
		RootCAs: roots, Certificates: []tls.Certificate{cert}, ServerName: d.names.ControllerServiceDNS, MinVersion: tls.VersionTLS13,
	})), grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(math.MaxInt32))) // as Envoy, whose envoy_grpc has no limit
	if err != nil {
		return err
	}
	sctx, cancel := context.WithCancel(context.Background())
	e := &simulatedEnvoy{conn: conn, cancel: cancel, resources: map[string][]proto.Message{}}
	d.envoy = e
	stream, err := discoveryv3.NewAggregatedDiscoveryServiceClient(conn).StreamAggregatedResources(sctx)
	if err != nil {
		return err
	}
	node := &corev3.Node{Id: d.names.Envoy + "-simulated", Cluster: sampleGateway.String()}
	for _, t := range envoyTypes {
		if err := stream.Send(&discoveryv3.DiscoveryRequest{Node: node, TypeUrl: t}); err != nil {
			return err
		}
	}
	go e.receive(stream, node)
	fmt.Fprintf(d.out, "    SIMULATED Envoy %s connected to %s (certificate name %s)\n", node.Id, d.xdsAddress, d.names.ControllerServiceDNS)
	return poll(ctx, func() (bool, error) {
		e.mu.Lock()
		defer e.mu.Unlock()
		return len(e.resources) == len(envoyTypes), e.err
	})
}

func (e *simulatedEnvoy) receive(stream discoveryv3.AggregatedDiscoveryService_StreamAggregatedResourcesClient, node *corev3.Node) {
	for {
		resp, err := stream.Recv()
		if err == nil {
			var msgs []proto.Message
			for _, a := range resp.Resources {
				m, uerr := a.UnmarshalNew()
				if uerr != nil {
					err = uerr
					break
				}
				msgs = append(msgs, m)
			}
			e.mu.Lock()
			e.resources[resp.TypeUrl] = msgs
			e.mu.Unlock()
		}
		if err == nil {
			err = stream.Send(&discoveryv3.DiscoveryRequest{Node: node, TypeUrl: resp.TypeUrl, VersionInfo: resp.VersionInfo, ResponseNonce: resp.Nonce})
		}
		if err != nil {
			e.mu.Lock()
			e.err = err
			e.mu.Unlock()
			return
		}
	}
}

// simulator interprets what the Envoy holds now.
func (e *simulatedEnvoy) simulator() (*envoysim.Simulator, []*listenerv3.Listener, []*routev3.RouteConfiguration, []*clusterv3.Cluster, []*endpointv3.ClusterLoadAssignment, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	ls, rs, cs, es, ss := typed[*listenerv3.Listener](e.resources[resourcev3.ListenerType]), typed[*routev3.RouteConfiguration](e.resources[resourcev3.RouteType]),
		typed[*clusterv3.Cluster](e.resources[resourcev3.ClusterType]), typed[*endpointv3.ClusterLoadAssignment](e.resources[resourcev3.EndpointType]),
		typed[*tlsv3.Secret](e.resources[resourcev3.SecretType])
	sim, err := envoysim.New(ls, rs, cs, es, ss)
	return sim, ls, rs, cs, es, err
}

func typed[T proto.Message](ms []proto.Message) []T {
	out := make([]T, 0, len(ms))
	for _, m := range ms {
		if t, ok := m.(T); ok {
			out = append(out, t)
		}
	}
	return out
}

func (e *simulatedEnvoy) close() {
	e.cancel()
	e.conn.Close()
}
