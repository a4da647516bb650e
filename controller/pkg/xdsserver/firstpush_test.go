package xdsserver

import (
	"context"
	"crypto/tls"
	"fmt"
	"sync"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
)

// With one first-push slot, a second Envoy is served only once the first
// has answered what it was sent; one that gives up waiting frees nothing,
// and a stream that closes gives its slot back.
func TestFirstPushesAreBounded(t *testing.T) {
	pki := newTestPKI(t)
	s, addr := serveWith(t, pki, Options{FirstPushes: 1})
	if _, err := s.Update(translated(t, "../offline/testdata/backends.in.yaml")); err != nil {
		t.Fatal(err)
	}
	type envoy struct {
		ads    discoveryv3.AggregatedDiscoveryService_StreamAggregatedResourcesClient
		cancel context.CancelFunc
		got    chan *discoveryv3.DiscoveryResponse
	}
	open := func(id string) *envoy {
		t.Helper()
		ctx, cancel := context.WithCancel(context.Background())
		t.Cleanup(cancel)
		ads, err := discoveryv3.NewAggregatedDiscoveryServiceClient(dial(t, pki, addr, true)).StreamAggregatedResources(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := ads.Send(&discoveryv3.DiscoveryRequest{Node: &corev3.Node{Id: id}, TypeUrl: resourcev3.ClusterType}); err != nil {
			t.Fatal(err)
		}
		e := &envoy{ads: ads, cancel: cancel, got: make(chan *discoveryv3.DiscoveryResponse, 4)}
		go func() {
			for {
				resp, err := ads.Recv()
				if err != nil {
					return
				}
				e.got <- resp
			}
		}()
		return e
	}
	first := func(e *envoy, what string) *discoveryv3.DiscoveryResponse {
		t.Helper()
		select {
		case resp := <-e.got:
			return resp
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: no response in 10s", what)
		}
		return nil
	}
	nothing := func(e *envoy, what string) {
		t.Helper()
		select {
		case resp := <-e.got:
			t.Fatalf("%s: served %s before a slot was free", what, resp.TypeUrl)
		case <-time.After(300 * time.Millisecond):
		}
	}

	a := open("envoy-a")
	cds := first(a, "the first Envoy")
	b := open("envoy-b")
	nothing(b, "the second Envoy, while the first has not answered")
	waitFor(t, "the second Envoy to wait for a slot", func() bool { c := s.Counters(); return c.Waiting == 1 && c.FirstPushes == 1 })
	if err := a.ads.Send(&discoveryv3.DiscoveryRequest{TypeUrl: resourcev3.ClusterType, VersionInfo: cds.VersionInfo, ResponseNonce: cds.Nonce}); err != nil {
		t.Fatal(err)
	}
	first(b, "the second Envoy, once the first answered")

	// The second holds the slot now: a third waits, and gets it when the
	// second's stream closes without answering.
	c := open("envoy-c")
	nothing(c, "the third Envoy, while the second has not answered")
	b.cancel()
	first(c, "the third Envoy, once the second's stream closed")
	waitFor(t, "no Envoy to wait", func() bool { return s.Counters().Waiting == 0 })
}

// Under a reconnect storm, with first pushes bounded, every Envoy of the
// fleet is served (half over delta xDS), and Envoys with another fleet's client certificate or
// none are refused before any response: the TLS handshake fails, so no
// stream opens.
func TestStormServesTheFleetAndRefusesOthers(t *testing.T) {
	pki, other := newTestPKI(t), newTestPKI(t)
	s, addr := serveWith(t, pki, Options{FirstPushes: 4})
	if _, err := s.Update(translated(t, "../offline/testdata/backends.in.yaml")); err != nil {
		t.Fatal(err)
	}
	foreign, err := clientTLS(pki)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := tls.LoadX509KeyPair(other.clientCert, other.clientKy)
	if err != nil {
		t.Fatal(err)
	}
	foreign.Certificates = []tls.Certificate{cert}
	none, err := clientTLS(pki)
	if err != nil {
		t.Fatal(err)
	}
	none.Certificates = nil

	const fleetSize, strangers = 40, 20
	var wg sync.WaitGroup
	served := make(chan *fleetEnvoy, fleetSize)
	refused := make(chan error, 2*strangers)
	for i := range fleetSize {
		wg.Add(1)
		go func() {
			defer wg.Done()
			e, err := connectEnvoy(pki, addr, fmt.Sprint("envoy-", i), i%2 == 1)
			if err != nil {
				t.Errorf("envoy-%d of the fleet: %v", i, err)
				return
			}
			served <- e
		}()
	}
	for i := range 2 * strangers {
		cfg := foreign
		if i%2 == 1 {
			cfg = none
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			refused <- stranger(addr, cfg)
		}()
	}
	wg.Wait()
	close(served)
	close(refused)
	n := 0
	for e := range served {
		n++
		e.close()
	}
	if n != fleetSize {
		t.Errorf("%d of the fleet's %d Envoys were served", n, fleetSize)
	}
	for err := range refused {
		if err == nil {
			t.Error("an Envoy without the fleet's client certificate got a response")
		}
	}
	if c := s.Counters(); c.ACKs == 0 || c.NACKs != 0 {
		t.Errorf("counters %+v: want the fleet's acknowledgements and no rejection", c)
	}
}

// stranger opens an ADS stream with cfg and asks for clusters; nil means it
// got a response.
func stranger(addr string, cfg *tls.Config) error {
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(credentials.NewTLS(cfg)))
	if err != nil {
		return err
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ads, err := discoveryv3.NewAggregatedDiscoveryServiceClient(conn).StreamAggregatedResources(ctx)
	if err != nil {
		return err
	}
	if err := ads.Send(&discoveryv3.DiscoveryRequest{Node: &corev3.Node{Id: "stranger"}, TypeUrl: resourcev3.ClusterType}); err != nil {
		return err
	}
	_, err = ads.Recv()
	return err
}
