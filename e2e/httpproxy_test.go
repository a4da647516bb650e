package e2e

import (
	"slices"
	"testing"
	"time"

	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	contourv1 "github.com/projectcontour/contour/apis/projectcontour/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	"isobar.dev/e2e/harness"
)

// A Gateway with the design's Ingress listeners serves the HTTPProxies of
// the IngressClass naming it, with the CRDs config/ installs: a root
// including a proxy of another namespace reaches a connected Envoy, and
// every proxy gets the status Contour writes (valid, orphaned), with the
// Gateway's address as its load balancer status; when the root stops
// including it, the included proxy becomes orphaned.
func TestServeHTTPProxy(t *testing.T) {
	ctx, cancel := harness.Context()
	defer cancel()
	ns, team := namespace(t), namespace(t)
	ingressClass := ingressGateway(t, ctx, ns)
	backend(t, ctx, ns, "app", "10.1.2.3")
	backend(t, ctx, team, "api", "10.1.2.4")
	proxy := func(namespace, name string, spec contourv1.HTTPProxySpec) *contourv1.HTTPProxy {
		spec.IngressClassName = ingressClass.Name
		return &contourv1.HTTPProxy{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}, Spec: spec}
	}
	service := func(name string) []contourv1.Service { return []contourv1.Service{{Name: name, Port: 8080}} }
	create(t, ctx,
		proxy(ns, "shop", contourv1.HTTPProxySpec{
			VirtualHost: &contourv1.VirtualHost{Fqdn: "shop.example.com"},
			Includes:    []contourv1.Include{{Name: "api", Namespace: team, Conditions: []contourv1.MatchCondition{{Prefix: "/api"}}}},
			Routes:      []contourv1.Route{{Services: service("app")}},
		}),
		proxy(team, "api", contourv1.HTTPProxySpec{Routes: []contourv1.Route{{Services: service("api")}}}),
		proxy(team, "lonely", contourv1.HTTPProxySpec{Routes: []contourv1.Route{{Services: service("api")}}}),
	)
	s := serve(t, ns, "web", nil)

	ads := newADSClient(t, dialXDS(t, s.pki, s.xds), "envoy-0", ns+"/web", xdsTypes...)
	lds := ads.next(resourcev3.ListenerType, 10*time.Second)
	ads.ack(lds)
	for deadline := time.Now().Add(30 * time.Second); ; {
		r := ads.next(resourcev3.RouteType, 10*time.Second)
		ads.ack(r)
		if slices.Contains(domains(t, r), "shop.example.com") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("RDS domains %v, want shop.example.com", domains(t, r))
		}
	}

	svc := &corev1.Service{}
	if err := env.Client.Get(ctx, keyOf(ns, "web-envoy"), svc); err != nil {
		t.Fatal(err)
	}
	statusIs := func(namespace, name, want string, lb bool) func() bool {
		return func() bool {
			p := &contourv1.HTTPProxy{}
			if err := env.Client.Get(ctx, keyOf(namespace, name), p); err != nil {
				t.Fatal(err)
			}
			valid := p.Status.GetConditionFor(contourv1.ValidConditionType)
			ok := p.Status.CurrentStatus == want && valid != nil && (valid.Status == contourv1.ConditionTrue) == (want == "valid")
			if lb {
				ok = ok && len(p.Status.LoadBalancer.Ingress) == 1 && p.Status.LoadBalancer.Ingress[0].IP == svc.Spec.ClusterIP
			}
			return ok
		}
	}
	eventually(t, 30*time.Second, "the root valid, with the Gateway's address", statusIs(ns, "shop", "valid", true))
	eventually(t, 30*time.Second, "the included proxy of another namespace valid", statusIs(team, "api", "valid", true))
	eventually(t, 30*time.Second, "the proxy no root includes orphaned", statusIs(team, "lonely", "orphaned", false))

	// The root stops including api: api is orphaned.
	err := retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		p := &contourv1.HTTPProxy{}
		if err := env.Client.Get(ctx, keyOf(ns, "shop"), p); err != nil {
			return err
		}
		p.Spec.Includes = nil
		return env.Client.Update(ctx, p)
	})
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "api orphaned once shop no longer includes it", statusIs(team, "api", "orphaned", false))
}
