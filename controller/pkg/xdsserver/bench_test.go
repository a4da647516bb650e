package xdsserver

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"google.golang.org/protobuf/proto"

	"isobar.dev/controller/pkg/offline"
	"isobar.dev/controller/pkg/resources"
	"isobar.dev/controller/pkg/translate"
	"isobar.dev/controller/pkg/xds"
)

// BenchmarkPush measures one route change of a 1,000-route Gateway reaching
// 1 and 100 connected state-of-the-world clients: the changed
// RouteConfiguration is marshalled once whatever the number of clients.
func BenchmarkPush(b *testing.B) {
	base := workloadResources(b, 1000)
	for _, clients := range []int{1, 100} {
		b.Run(fmt.Sprintf("clients=%d", clients), func(b *testing.B) {
			pki := newTestPKI(b)
			s, addr := serveBench(b, pki)
			if _, err := s.Update(base); err != nil {
				b.Fatal(err)
			}
			streams := make([]discoveryv3.AggregatedDiscoveryService_StreamAggregatedResourcesClient, clients)
			for i := range streams {
				conn := dialBench(b, pki, addr)
				ads, err := discoveryv3.NewAggregatedDiscoveryServiceClient(conn).StreamAggregatedResources(context.Background())
				if err != nil {
					b.Fatal(err)
				}
				req := &discoveryv3.DiscoveryRequest{Node: &corev3.Node{Id: fmt.Sprint("envoy-", i)}, TypeUrl: resourcev3.RouteType}
				if err := ads.Send(req); err != nil {
					b.Fatal(err)
				}
				first, err := ads.Recv()
				if err != nil {
					b.Fatal(err)
				}
				if err := ads.Send(&discoveryv3.DiscoveryRequest{TypeUrl: resourcev3.RouteType, VersionInfo: first.VersionInfo, ResponseNonce: first.Nonce}); err != nil {
					b.Fatal(err)
				}
				streams[i] = ads
			}
			// What changes is a route of the last route configuration:
			// the first of its virtual hosts that has routes.
			last := len(base.Routes) - 1
			vh := slices.IndexFunc(base.Routes[last].GetVirtualHosts(), func(v *routev3.VirtualHost) bool { return len(v.GetRoutes()) > 0 })
			if vh < 0 {
				b.Fatal("the last route configuration has no routes")
			}
			b.ResetTimer()
			for i := range b.N {
				r := *base
				r.Routes = append([]*routev3.RouteConfiguration(nil), base.Routes...)
				changed := proto.Clone(r.Routes[last]).(*routev3.RouteConfiguration)
				changed.VirtualHosts[vh].Routes[0].Name = fmt.Sprint("changed-", i)
				r.Routes[last] = changed
				if _, err := s.Update(&r); err != nil {
					b.Fatal(err)
				}
				for _, ads := range streams {
					resp, err := ads.Recv()
					if err != nil {
						b.Fatal(err)
					}
					if err := ads.Send(&discoveryv3.DiscoveryRequest{TypeUrl: resourcev3.RouteType, VersionInfo: resp.VersionInfo, ResponseNonce: resp.Nonce}); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}

// BenchmarkRouteChange is the controller's work for one HTTPRoute edit of a
// 10,000-route Gateway (ISOBAR_BENCH_ROUTES sets another number) after the
// snapshot: both translation stages, the server's update, and the changed
// RouteConfigurations reaching a connected Envoy; with the workload's 5
// hostnames, and with one hostname (so one HTTPS filter chain and route
// configuration) per route.
func BenchmarkRouteChange(b *testing.B) {
	routes := 10000
	if n, err := strconv.Atoi(os.Getenv("ISOBAR_BENCH_ROUTES")); err == nil && n > 0 {
		routes = n
	}
	for _, hosts := range []int{5, routes} {
		b.Run(fmt.Sprintf("hosts=%d", hosts), func(b *testing.B) { routeChange(b, workload(b, routes, hosts)) })
	}
}

func routeChange(b *testing.B, res *resources.Resources) {
	stage1 := translate.NewTranslator(translate.Options{ControllerName: offline.DefaultControllerName})
	stage2 := xds.NewTranslator(xds.DefaultSettings())
	// The time of each part of a change, reported per change beside the
	// whole: stage1, stage2, update (the server's), delivery (from the
	// update to the client holding the response).
	var spent [4]time.Duration
	lap := func(part int, since time.Time) time.Time {
		now := time.Now()
		spent[part] += now.Sub(since)
		return now
	}
	translate := func() *xds.Resources {
		start := time.Now()
		g := stage1.Translate(res).Gateways[0]
		start = lap(0, start)
		out, err := stage2.Translate(g)
		if err != nil {
			b.Fatal(err)
		}
		lap(1, start)
		return out
	}
	pki := newTestPKI(b)
	s, addr := serveBench(b, pki)
	if _, err := s.Update(translate()); err != nil {
		b.Fatal(err)
	}
	conn := dialBench(b, pki, addr)
	ads, err := discoveryv3.NewAggregatedDiscoveryServiceClient(conn).StreamAggregatedResources(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	req := &discoveryv3.DiscoveryRequest{Node: &corev3.Node{Id: "envoy"}, TypeUrl: resourcev3.RouteType}
	for {
		if err := ads.Send(req); err != nil {
			b.Fatal(err)
		}
		resp, err := ads.Recv()
		if err != nil {
			b.Fatal(err)
		}
		req = &discoveryv3.DiscoveryRequest{TypeUrl: resourcev3.RouteType, VersionInfo: resp.VersionInfo, ResponseNonce: resp.Nonce}
		if req.ResourceNames == nil {
			break
		}
	}
	if err := ads.Send(req); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	spent = [4]time.Duration{}
	for i := range b.N {
		k := i % len(res.HTTPRoutes)
		c := res.HTTPRoutes[k].DeepCopy()
		c.Generation++
		c.Spec.Rules[0].Filters[0].RequestHeaderModifier.Set[0].Value = fmt.Sprint("changed-", i)
		res.HTTPRoutes[k] = c
		out := translate()
		start := time.Now()
		if n, err := s.Update(out); err != nil || n == 0 {
			b.Fatalf("update: %d changed, %v", n, err)
		}
		start = lap(2, start)
		resp, err := ads.Recv()
		if err != nil {
			b.Fatal(err)
		}
		lap(3, start)
		if err := ads.Send(&discoveryv3.DiscoveryRequest{TypeUrl: resourcev3.RouteType, VersionInfo: resp.VersionInfo, ResponseNonce: resp.Nonce}); err != nil {
			b.Fatal(err)
		}
	}
	for i, part := range []string{"stage1", "stage2", "update", "delivery"} {
		b.ReportMetric(float64(spent[i].Nanoseconds())/float64(b.N), part+"-ns/op")
	}
}

func workloadResources(b *testing.B, n int) *xds.Resources {
	r, err := offline.Translate(workload(b, n, 5), offline.Options{})
	if err != nil {
		b.Fatal(err)
	}
	return r.XDS[0]
}

func workload(b *testing.B, n, hosts int) *resources.Resources {
	out, err := exec.Command("go", "env", "GOWORK").Output()
	if err != nil {
		b.Skip(err)
	}
	script := filepath.Join(filepath.Dir(strings.TrimSpace(string(out))), "..", "shared", "bench", "gen-routes.py")
	if _, err := os.Stat(script); err != nil {
		b.Skipf("workload generator not found: %v", err)
	}
	data, err := exec.Command("python3", script, "--routes", fmt.Sprint(n), "--hosts", fmt.Sprint(hosts), "--controller-name", offline.DefaultControllerName).Output()
	if err != nil {
		b.Fatal(err)
	}
	res := &resources.Resources{}
	if _, err := res.Load("bench", bytes.NewReader(data)); err != nil {
		b.Fatal(err)
	}
	return res
}
