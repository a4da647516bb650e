package e2e

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"isobar.dev/e2e/harness"
)

// Bad input shows in status and never stops the rest: a route to a missing
// Service, a route with an invalid regular expression and listeners whose
// protocols conflict on a port (both not accepted: the specification forbids
// picking a winner) leave the good route and listener served.
func TestServeBadInput(t *testing.T) {
	ns := namespace(t)
	ctx, cancel := harness.Context()
	defer cancel()
	fleet(t, ctx, ns, "web")
	g := &gatewayv1.Gateway{}
	if err := env.Client.Get(ctx, keyOf(ns, "web"), g); err != nil {
		t.Fatal(err)
	}
	g.Spec.Listeners = append(g.Spec.Listeners,
		gatewayv1.Listener{Name: "http-on-81", Protocol: gatewayv1.HTTPProtocolType, Port: 81},
		gatewayv1.Listener{Name: "tcp-on-81", Protocol: gatewayv1.TCPProtocolType, Port: 81})
	if err := env.Client.Update(ctx, g); err != nil {
		t.Fatal(err)
	}
	backend(t, ctx, ns, "app", "10.1.2.3")
	good := httpRoute(ns, "good", "app", "web")
	good.Spec.Hostnames = []gatewayv1.Hostname{"good.example.com"}
	missing := httpRoute(ns, "missing", "nope", "web")
	missing.Spec.Hostnames = []gatewayv1.Hostname{"missing.example.com"}
	badRegex := httpRoute(ns, "bad-regex", "app", "web")
	badRegex.Spec.Hostnames = []gatewayv1.Hostname{"regex.example.com"}
	badRegex.Spec.Rules[0].Matches = []gatewayv1.HTTPRouteMatch{{Path: &gatewayv1.HTTPPathMatch{Type: ptr.To(gatewayv1.PathMatchRegularExpression), Value: ptr.To("/(unclosed")}}}
	create(t, ctx, good, missing, badRegex)
	s := serve(t, ns, "web", nil)

	routeCondition := func(name, typ string, status metav1.ConditionStatus, reason string) {
		t.Helper()
		eventually(t, 30*time.Second, name+" "+typ+" "+string(status)+" "+reason, func() bool {
			hr := &gatewayv1.HTTPRoute{}
			if err := env.Client.Get(ctx, keyOf(ns, name), hr); err != nil {
				t.Fatal(err)
			}
			p := routeParent(hr, "web")
			if p == nil {
				return false
			}
			c := meta.FindStatusCondition(p.Conditions, typ)
			return c != nil && c.Status == status && c.Reason == reason && c.Message != ""
		})
	}
	routeCondition("good", "Accepted", metav1.ConditionTrue, "Accepted")
	routeCondition("good", "ResolvedRefs", metav1.ConditionTrue, "ResolvedRefs")
	routeCondition("missing", "Accepted", metav1.ConditionTrue, "Accepted")
	routeCondition("missing", "ResolvedRefs", metav1.ConditionFalse, "BackendNotFound")
	routeCondition("bad-regex", "Accepted", metav1.ConditionFalse, "UnsupportedValue")
	eventually(t, 30*time.Second, "listeners http-on-81 and tcp-on-81 Conflicted ProtocolConflict, http fine", func() bool {
		if err := env.Client.Get(ctx, keyOf(ns, "web"), g); err != nil {
			t.Fatal(err)
		}
		conflicted, fine := 0, false
		for _, l := range g.Status.Listeners {
			switch l.Name {
			case "tcp-on-81", "http-on-81":
				c := meta.FindStatusCondition(l.Conditions, "Conflicted")
				if c != nil && c.Status == metav1.ConditionTrue && c.Reason == "ProtocolConflict" && !meta.IsStatusConditionTrue(l.Conditions, "Accepted") {
					conflicted++
				}
			case "http":
				// attachedRoutes counts the accepted routes: good and
				// missing (its backend is missing, not its parent), not
				// bad-regex, whose only rule is invalid.
				fine = meta.IsStatusConditionTrue(l.Conditions, "Programmed") && l.AttachedRoutes == 2
			}
		}
		accepted := meta.FindStatusCondition(g.Status.Conditions, "Accepted")
		return conflicted == 2 && fine && accepted != nil && accepted.Reason == "ListenersNotValid" &&
			strings.Contains(accepted.Message, "[http-on-81 tcp-on-81] conflict")
	})

	ads := newADSClient(t, dialXDS(t, s.pki, s.xds), "envoy-0", ns+"/web", resourcev3.RouteType)
	var names []string
	for _, rc := range resources[routev3.RouteConfiguration](t, ads.next(resourcev3.RouteType, 10*time.Second)) {
		for _, vh := range rc.VirtualHosts {
			names = append(names, vh.Name)
		}
	}
	for _, want := range []string{"good.example.com", "missing.example.com"} {
		if !slices.Contains(names, want) {
			t.Errorf("virtual hosts %v lack %s", names, want)
		}
	}
	if slices.Contains(names, "regex.example.com") {
		t.Errorf("virtual hosts %v include the rejected route's", names)
	}
}

// Only Envoys with a client certificate from the fleet's CA get anything.
func TestServeRefusesOtherClients(t *testing.T) {
	ns := namespace(t)
	ctx, cancel := harness.Context()
	defer cancel()
	fleet(t, ctx, ns, "web")
	s := serve(t, ns, "web", nil)
	other, err := harness.NewPKI(t.TempDir(), "xds.test")
	if err != nil {
		t.Fatal(err)
	}
	caPEM, err := os.ReadFile(s.pki.CA)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(caPEM)
	otherCert, err := tls.LoadX509KeyPair(other.ClientCert, other.ClientKey)
	if err != nil {
		t.Fatal(err)
	}
	for name, certs := range map[string][]tls.Certificate{"no certificate": nil, "another fleet's certificate": {otherCert}} {
		t.Run(name, func(t *testing.T) {
			conn, err := grpc.NewClient(s.xds, grpc.WithTransportCredentials(credentials.NewTLS(&tls.Config{
				RootCAs: roots, ServerName: "xds.test", Certificates: certs, MinVersion: tls.VersionTLS13,
			})))
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			sctx, scancel := context.WithTimeout(ctx, 10*time.Second)
			defer scancel()
			stream, err := discoveryv3.NewAggregatedDiscoveryServiceClient(conn).StreamAggregatedResources(sctx)
			if err == nil {
				err = stream.Send(&discoveryv3.DiscoveryRequest{TypeUrl: resourcev3.ListenerType})
			}
			if err == nil {
				var resp *discoveryv3.DiscoveryResponse
				resp, err = stream.Recv()
				if err == nil {
					t.Fatalf("got %d listeners", len(resp.Resources))
				}
			}
			if sctx.Err() != nil {
				t.Fatalf("no refusal within the deadline: %v", err)
			}
		})
	}
	// The fleet's own Envoy is served.
	ads := newADSClient(t, dialXDS(t, s.pki, s.xds), "envoy-0", ns+"/web", resourcev3.ListenerType)
	if ls := resources[listenerv3.Listener](t, ads.next(resourcev3.ListenerType, 10*time.Second)); len(ls) != 1 {
		t.Fatalf("the fleet's Envoy got %d listeners, want 1", len(ls))
	}
}

// Two controllers, one per Gateway, both parents of one HTTPRoute that
// keeps changing: each keeps its own status entry current and never erases
// the other's.
func TestServeSharedRoute(t *testing.T) {
	ns := namespace(t)
	ctx, cancel := harness.Context()
	defer cancel()
	fleet(t, ctx, ns, "a", "b")
	backend(t, ctx, ns, "app", "10.1.2.3")
	create(t, ctx, httpRoute(ns, "shared", "app", "a", "b"))
	serve(t, ns, "a", nil)
	serve(t, ns, "b", nil)
	for i := range 10 {
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			hr := &gatewayv1.HTTPRoute{}
			if err := env.Client.Get(ctx, keyOf(ns, "shared"), hr); err != nil {
				return err
			}
			hr.Spec.Hostnames = []gatewayv1.Hostname{gatewayv1.Hostname(fmt.Sprintf("v%d.example.com", i))}
			return env.Client.Update(ctx, hr)
		})
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	eventually(t, 30*time.Second, "both entries at the last generation", func() bool {
		hr := &gatewayv1.HTTPRoute{}
		if err := env.Client.Get(ctx, keyOf(ns, "shared"), hr); err != nil {
			t.Fatal(err)
		}
		for _, gw := range []string{"a", "b"} {
			p := routeParent(hr, gw)
			if p == nil {
				return false
			}
			c := meta.FindStatusCondition(p.Conditions, "Accepted")
			if c == nil || c.Status != metav1.ConditionTrue || c.ObservedGeneration != hr.Generation {
				return false
			}
		}
		return len(hr.Status.Parents) == 2
	})
}

// Replicas with leader election all serve xDS; one writes status, and when
// a replica stops, status keeps being written.
func TestServeLeaderElection(t *testing.T) {
	ns := namespace(t)
	ctx, cancel := harness.Context()
	defer cancel()
	fleet(t, ctx, ns, "web")
	pki, err := harness.NewPKI(t.TempDir(), "xds.test")
	if err != nil {
		t.Fatal(err)
	}
	replicas := []*served{serve(t, ns, "web", pki, "--leader-elect"), serve(t, ns, "web", pki, "--leader-elect")}
	for i, r := range replicas {
		ads := newADSClient(t, dialXDS(t, pki, r.xds), fmt.Sprintf("envoy-%d", i), ns+"/web", resourcev3.ListenerType)
		if ls := resources[listenerv3.Listener](t, ads.next(resourcev3.ListenerType, 10*time.Second)); len(ls) != 1 {
			t.Fatalf("replica %d served %d listeners, want 1", i, len(ls))
		}
	}
	waitGatewayCondition(t, ctx, ns, "web", "Accepted", metav1.ConditionTrue, "Accepted", "")
	lease := &coordinationv1.Lease{}
	if err := env.Client.Get(ctx, keyOf(ns, "isobar-controller-web"), lease); err != nil {
		t.Fatalf("the leader election Lease: %v", err)
	}
	holder := ptr.Deref(lease.Spec.HolderIdentity, "")
	if holder == "" {
		t.Fatal("the Lease has no holder")
	}
	// As controller-runtime's own leader election, the leader tells on
	// the Lease that it became the leader.
	eventually(t, 30*time.Second, "a LeaderElection Event on the Lease", func() bool {
		var events corev1.EventList
		if err := env.Client.List(ctx, &events, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		return slices.ContainsFunc(events.Items, func(e corev1.Event) bool {
			return e.InvolvedObject.Kind == "Lease" && e.InvolvedObject.Name == "isobar-controller-web" && e.Reason == "LeaderElection" &&
				strings.Contains(e.Message, holder+" became leader")
		})
	})

	if code, err := replicas[0].proc.Stop(20 * time.Second); err != nil || code != 0 {
		t.Fatalf("stopping a replica: %d, %v", code, err)
	}
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		g := &gatewayv1.Gateway{}
		if err := env.Client.Get(ctx, keyOf(ns, "web"), g); err != nil {
			return err
		}
		g.Spec.Listeners = append(g.Spec.Listeners, gatewayv1.Listener{Name: "alt", Protocol: gatewayv1.HTTPProtocolType, Port: 8080})
		return env.Client.Update(ctx, g)
	})
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, 60*time.Second, "the remaining replica to report the new listener", func() bool {
		g := &gatewayv1.Gateway{}
		if err := env.Client.Get(ctx, keyOf(ns, "web"), g); err != nil {
			t.Fatal(err)
		}
		return slices.ContainsFunc(g.Status.Listeners, func(l gatewayv1.ListenerStatus) bool {
			c := meta.FindStatusCondition(l.Conditions, "Accepted")
			return l.Name == "alt" && c != nil && c.ObservedGeneration == g.Generation
		})
	})
}
