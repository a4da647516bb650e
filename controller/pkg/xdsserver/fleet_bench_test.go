package xdsserver

import (
	"cmp"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"isobar.dev/controller/pkg/xds"
)

// BenchmarkFleet measures a fleet of Envoys on one controller, as a
// DaemonSet fleet on a large cluster connects one Envoy per node: N
// simulated Envoys (ISOBAR_FLEET_ENVOYS, default 100; "100,1000" for
// several), each on its own mTLS connection with an ADS stream for
// listeners, clusters and routes, state of the world and delta (as
// ISOBAR_FLEET_XDS says, default "sotw,delta"), on a Gateway of 10,000 routes
// (ISOBAR_BENCH_ROUTES). Per N it reports, per route change, the time from
// the server's update until each Envoy holds it (p50, p99, max), the bytes
// each Envoy receives, the heap each connected Envoy costs (both ends of
// its connection: the clients run in this process), and the time for all N
// to reconnect to a restarted server and hold the whole configuration,
// with the heap's peak meanwhile. The servers bound first pushes as the
// controller does by default (ISOBAR_FLEET_FIRST_PUSHES, 32; 0 for no
// bound).
//
// The simulated Envoys read only what a response says of itself (version,
// nonce, size), not its resources, so that their work does not crowd the
// server's on a small machine: a real Envoy decodes elsewhere.
func BenchmarkFleet(b *testing.B) {
	routes := 10000
	if n, err := strconv.Atoi(os.Getenv("ISOBAR_BENCH_ROUTES")); err == nil && n > 0 {
		routes = n
	}
	sizes := []int{100}
	if v := os.Getenv("ISOBAR_FLEET_ENVOYS"); v != "" {
		sizes = nil
		for _, f := range strings.Split(v, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || n <= 0 {
				b.Fatalf("ISOBAR_FLEET_ENVOYS=%q: want envoy counts, comma separated", v)
			}
			sizes = append(sizes, n)
		}
	}
	// Decoded, so that a change can edit a route.
	base, err := xds.Decoded(workloadResources(b, routes))
	if err != nil {
		b.Fatal(err)
	}
	opts := Options{FirstPushes: 32}
	if v := os.Getenv("ISOBAR_FLEET_FIRST_PUSHES"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			b.Fatalf("ISOBAR_FLEET_FIRST_PUSHES=%q: want a count, 0 for no bound", v)
		}
		opts.FirstPushes = n
	}
	protocols := strings.Split(cmp.Or(os.Getenv("ISOBAR_FLEET_XDS"), "sotw,delta"), ",")
	for _, p := range protocols {
		if p != "sotw" && p != "delta" {
			b.Fatalf("ISOBAR_FLEET_XDS=%q: want sotw, delta or both, comma separated", p)
		}
	}
	for _, p := range protocols {
		for _, n := range sizes {
			b.Run(fmt.Sprintf("xds=%s/envoys=%d", p, n), func(b *testing.B) { fleet(b, base, n, opts, p == "delta") })
		}
	}
}

func fleet(b *testing.B, base *xds.Resources, n int, opts Options, delta bool) {
	pki := newTestPKI(b)
	s, addr := serveWith(b, pki, opts)
	if _, err := s.Update(base); err != nil {
		b.Fatal(err)
	}
	var before, after runtime.MemStats
	settle(&before)
	envoys := connectFleet(b, pki, addr, n, delta)
	settle(&after)

	// The route changed is the first of the largest route configuration,
	// which every change sends whole.
	rc, vh := 0, 0
	for i, c := range base.Routes {
		if proto.Size(c) > proto.Size(base.Routes[rc]) {
			rc = i
		}
	}
	for i, v := range base.Routes[rc].VirtualHosts {
		if len(v.Routes) > 0 {
			vh = i
			break
		}
	}
	var latencies []time.Duration
	var received int64
	b.ResetTimer()
	for i := range b.N {
		r := *base
		r.Routes = slices.Clone(base.Routes)
		changed := proto.Clone(r.Routes[rc]).(*routev3.RouteConfiguration)
		changed.VirtualHosts[vh].Routes[0].Name = fmt.Sprint("changed-", i)
		r.Routes[rc] = changed
		start := time.Now()
		if _, err := s.Update(&r); err != nil {
			b.Fatal(err)
		}
		for _, e := range envoys {
			got := <-e.routes
			latencies = append(latencies, got.at.Sub(start))
			received += int64(got.size)
		}
	}
	b.StopTimer()
	slices.Sort(latencies)
	at := func(q float64) float64 {
		return float64(latencies[min(len(latencies)-1, int(q*float64(len(latencies))))].Microseconds()) / 1000
	}
	b.ReportMetric(at(0.5), "p50-ms")
	b.ReportMetric(at(0.99), "p99-ms")
	b.ReportMetric(float64(latencies[len(latencies)-1].Microseconds())/1000, "max-ms")
	b.ReportMetric(float64(received)/float64(b.N*n), "B/envoy/change")
	b.ReportMetric(float64(int64(after.HeapInuse)-int64(before.HeapInuse))/float64(n), "heap-B/envoy")
	for _, e := range envoys {
		e.close()
	}

	// A restarted controller: a new server with the configuration, and
	// every Envoy reconnecting at once.
	s2, addr2 := serveWith(b, pki, opts)
	if _, err := s2.Update(base); err != nil {
		b.Fatal(err)
	}
	settle(&before)
	peak := watchHeap()
	start := time.Now()
	again := connectFleet(b, pki, addr2, n, delta)
	b.ReportMetric(float64(time.Since(start).Milliseconds()), "reconnect-ms")
	b.ReportMetric(float64(int64(peak())-int64(before.HeapInuse))/(1<<20), "reconnect-peak-heap-MB")
	for _, e := range again {
		e.close()
	}
}

// watchHeap samples the heap in use every 10ms until the returned
// function is called, which returns the highest sample.
func watchHeap() (peak func() uint64) {
	var mu sync.Mutex
	var high uint64
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(10 * time.Millisecond)
		defer t.Stop()
		for {
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			mu.Lock()
			high = max(high, m.HeapInuse)
			mu.Unlock()
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	return func() uint64 {
		close(done)
		mu.Lock()
		defer mu.Unlock()
		return high
	}
}

// settle collects garbage twice (pooled buffers survive one collection)
// and reads the heap's statistics.
func settle(m *runtime.MemStats) {
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(m)
}

// fleetEnvoy is a simulated Envoy: one ADS stream, which it acknowledges,
// telling when each new route configuration version arrives.
type fleetEnvoy struct {
	conn   *grpc.ClientConn
	cancel context.CancelFunc
	routes chan routeArrival
}

type routeArrival struct {
	at   time.Time
	size int
}

// connectFleet connects n Envoys at once, over delta xDS or state of the
// world, and returns when each holds listeners, clusters and routes.
func connectFleet(b *testing.B, pki *testPKI, addr string, n int, delta bool) []*fleetEnvoy {
	envoys := make([]*fleetEnvoy, n)
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range envoys {
		wg.Add(1)
		go func() {
			defer wg.Done()
			e, err := connectEnvoy(pki, addr, fmt.Sprint("envoy-", i), delta)
			if err != nil {
				errs <- err
				return
			}
			envoys[i] = e
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	return envoys
}

func connectEnvoy(pki *testPKI, addr, id string, delta bool) (*fleetEnvoy, error) {
	cfg, err := clientTLS(pki)
	if err != nil {
		return nil, err
	}
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(credentials.NewTLS(cfg)),
		grpc.WithDefaultCallOptions(grpc.ForceCodecV2(headerCodec{}), grpc.MaxCallRecvMsgSize(1<<31-1)))
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	ads, err := openADS(ctx, conn, delta)
	if err != nil {
		cancel()
		conn.Close()
		return nil, err
	}
	node := &corev3.Node{Id: id}
	for _, typ := range []string{resourcev3.ClusterType, resourcev3.ListenerType, resourcev3.RouteType} {
		if err := ads.subscribe(node, typ); err != nil {
			cancel()
			conn.Close()
			return nil, err
		}
	}
	e := &fleetEnvoy{conn: conn, cancel: cancel, routes: make(chan routeArrival, 16)}
	synced := make(chan error, 1)
	go func() {
		have := map[string]bool{}
		for {
			resp, err := ads.recv()
			if err != nil {
				if len(have) < 3 {
					synced <- err
				}
				return
			}
			at := time.Now()
			if err := ads.ack(resp); err != nil {
				return
			}
			first := !have[resp.typ]
			have[resp.typ] = true
			switch {
			case first && len(have) == 3:
				synced <- nil
			case !first && resp.typ == resourcev3.RouteType:
				e.routes <- routeArrival{at: at, size: resp.size}
			}
		}
	}()
	select {
	case err := <-synced:
		if err != nil {
			e.close()
			return nil, err
		}
	case <-time.After(5 * time.Minute):
		e.close()
		return nil, fmt.Errorf("envoy %s: no configuration in five minutes", id)
	}
	return e, nil
}

// adsStream is one simulated Envoy's ADS stream, state of the world or
// delta: it subscribes to every resource of a type, and acknowledges.
type adsStream struct {
	sotw  discoveryv3.AggregatedDiscoveryService_StreamAggregatedResourcesClient
	delta discoveryv3.AggregatedDiscoveryService_DeltaAggregatedResourcesClient
}

// response is what a simulated Envoy reads of a response.
type response struct {
	typ, version, nonce string
	size                int
}

func openADS(ctx context.Context, conn *grpc.ClientConn, delta bool) (*adsStream, error) {
	c := discoveryv3.NewAggregatedDiscoveryServiceClient(conn)
	var s adsStream
	var err error
	if delta {
		s.delta, err = c.DeltaAggregatedResources(ctx)
	} else {
		s.sotw, err = c.StreamAggregatedResources(ctx)
	}
	return &s, err
}

func (s *adsStream) subscribe(node *corev3.Node, typ string) error {
	if s.delta != nil {
		return s.delta.Send(&discoveryv3.DeltaDiscoveryRequest{Node: node, TypeUrl: typ})
	}
	return s.sotw.Send(&discoveryv3.DiscoveryRequest{Node: node, TypeUrl: typ})
}

func (s *adsStream) recv() (response, error) {
	if s.delta != nil {
		r, err := s.delta.Recv()
		if err != nil {
			return response{}, err
		}
		size, _ := strconv.Atoi(r.GetControlPlane().GetIdentifier())
		return response{typ: r.TypeUrl, version: r.SystemVersionInfo, nonce: r.Nonce, size: size}, nil
	}
	r, err := s.sotw.Recv()
	if err != nil {
		return response{}, err
	}
	size, _ := strconv.Atoi(r.GetControlPlane().GetIdentifier())
	return response{typ: r.TypeUrl, version: r.VersionInfo, nonce: r.Nonce, size: size}, nil
}

func (s *adsStream) ack(r response) error {
	if s.delta != nil {
		return s.delta.Send(&discoveryv3.DeltaDiscoveryRequest{TypeUrl: r.typ, ResponseNonce: r.nonce})
	}
	return s.sotw.Send(&discoveryv3.DiscoveryRequest{TypeUrl: r.typ, VersionInfo: r.version, ResponseNonce: r.nonce})
}

func (e *fleetEnvoy) close() {
	e.cancel()
	e.conn.Close()
}

// headerCodec marshals requests as protobuf and reads of a response only
// its version, type, nonce and size (as the control plane identifier),
// skipping its resources where they lie in gRPC's buffers: a simulated
// Envoy that does not decode, nor even copy, what it is sent.
type headerCodec struct{}

func (headerCodec) Name() string { return "proto" }

func (headerCodec) Marshal(v any) (mem.BufferSlice, error) {
	b, err := proto.Marshal(v.(proto.Message))
	return mem.BufferSlice{mem.SliceBuffer(b)}, err
}

func (headerCodec) Unmarshal(data mem.BufferSlice, v any) error {
	// A delta response numbers its version, type and nonce as a state of
	// the world one does.
	var version, typeURL, nonce *string
	plane := &corev3.ControlPlane{Identifier: strconv.Itoa(data.Len())}
	switch resp := v.(type) {
	case *discoveryv3.DiscoveryResponse:
		version, typeURL, nonce, resp.ControlPlane = &resp.VersionInfo, &resp.TypeUrl, &resp.Nonce, plane
	case *discoveryv3.DeltaDiscoveryResponse:
		version, typeURL, nonce, resp.ControlPlane = &resp.SystemVersionInfo, &resp.TypeUrl, &resp.Nonce, plane
	default:
		return proto.Unmarshal(data.Materialize(), v.(proto.Message))
	}
	r := data.Reader()
	defer r.Close()
	for r.Remaining() > 0 {
		tag, err := binary.ReadUvarint(r)
		if err != nil {
			return err
		}
		num, typ := protowire.DecodeTag(tag)
		switch typ {
		case protowire.BytesType:
			n, err := binary.ReadUvarint(r)
			if err != nil {
				return err
			}
			if num != 1 && num != 4 && num != 5 {
				if _, err := r.Discard(int(n)); err != nil {
					return err
				}
				continue
			}
			buf := make([]byte, n)
			if _, err := io.ReadFull(r, buf); err != nil {
				return err
			}
			switch num {
			case 1:
				*version = string(buf)
			case 4:
				*typeURL = string(buf)
			case 5:
				*nonce = string(buf)
			}
		case protowire.VarintType:
			if _, err := binary.ReadUvarint(r); err != nil {
				return err
			}
		case protowire.Fixed32Type:
			if _, err := r.Discard(4); err != nil {
				return err
			}
		case protowire.Fixed64Type:
			if _, err := r.Discard(8); err != nil {
				return err
			}
		default:
			return fmt.Errorf("discovery response: wire type %d", typ)
		}
	}
	return nil
}
