package e2e

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"isobar.dev/e2e/harness"
)

// A Gateway with the design's Ingress listeners serves the Ingresses of
// the IngressClass naming it: their routes reach a connected Envoy, they
// get the Gateway's address as their load balancer status, what cannot be
// served is told in an Event, and removing the IngressClass takes the
// routes and the status back.
func TestServeIngress(t *testing.T) {
	ctx, cancel := harness.Context()
	defer cancel()
	ns := namespace(t)
	ingressClass := ingressGateway(t, ctx, ns)
	backend(t, ctx, ns, "app", "10.1.2.3")
	ing := func(name, port string) *networkingv1.Ingress {
		return &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: networkingv1.IngressSpec{
			IngressClassName: ptr.To(ingressClass.Name),
			Rules: []networkingv1.IngressRule{{Host: name + ".example.com", IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{
				Paths: []networkingv1.HTTPIngressPath{{Path: "/", PathType: ptr.To(networkingv1.PathTypePrefix), Backend: networkingv1.IngressBackend{
					Service: &networkingv1.IngressServiceBackend{Name: "app", Port: networkingv1.ServiceBackendPort{Name: port}},
				}}},
			}}}},
		}}
	}
	create(t, ctx, ing("shop", "http"), ing("broken", "nope"))
	s := serve(t, ns, "web", nil)

	ads := newADSClient(t, dialXDS(t, s.pki, s.xds), "envoy-0", ns+"/web", xdsTypes...)
	lds := ads.next(resourcev3.ListenerType, 10*time.Second)
	if ls := resources[listenerv3.Listener](t, lds); len(ls) != 1 || ls[0].Name != "ingress_http" {
		t.Fatalf("LDS: %v, want the design's ingress_http", ls)
	}
	ads.ack(lds)
	// awaitShop reads route configurations until shop.example.com is
	// there (or not, with want false).
	awaitShop := func(want bool) {
		t.Helper()
		var got []string
		for deadline := time.Now().Add(30 * time.Second); ; {
			r := ads.next(resourcev3.RouteType, 10*time.Second)
			ads.ack(r)
			if got = domains(t, r); slices.Contains(got, "shop.example.com") == want {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("RDS domains %v, want shop.example.com: %v", got, want)
			}
		}
	}
	awaitShop(true)

	svc := &corev1.Service{}
	if err := env.Client.Get(ctx, keyOf(ns, "web-envoy"), svc); err != nil {
		t.Fatal(err)
	}
	lbIs := func(name string, want []string) func() bool {
		return func() bool {
			i := &networkingv1.Ingress{}
			if err := env.Client.Get(ctx, keyOf(ns, name), i); err != nil {
				t.Fatal(err)
			}
			var ips []string
			for _, in := range i.Status.LoadBalancer.Ingress {
				ips = append(ips, in.IP)
			}
			return slices.Equal(ips, want)
		}
	}
	eventually(t, 30*time.Second, "the Ingress's load balancer status is the Gateway's address "+svc.Spec.ClusterIP, lbIs("shop", []string{svc.Spec.ClusterIP}))
	eventually(t, 30*time.Second, "a Warning Event on the Ingress whose Service has no port named nope", func() bool {
		var evs eventsv1.EventList
		if err := env.Client.List(ctx, &evs, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		return slices.ContainsFunc(evs.Items, func(e eventsv1.Event) bool {
			return e.Regarding.Kind == "Ingress" && e.Regarding.Name == "broken" && e.Type == corev1.EventTypeWarning && strings.Contains(e.Note, `no port named "nope"`)
		})
	})

	// The Gateway loses the Ingress listeners' shape: its Ingresses lose
	// their status and are told why; back, they get it again.
	setListenerName := func(name gatewayv1.SectionName) {
		err := retry.RetryOnConflict(retry.DefaultBackoff, func() error {
			gw := &gatewayv1.Gateway{}
			if err := env.Client.Get(ctx, keyOf(ns, "web"), gw); err != nil {
				return err
			}
			gw.Spec.Listeners[0].Name = name
			return env.Client.Update(ctx, gw)
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	setListenerName("http")
	eventually(t, 30*time.Second, "the load balancer status cleared while the Gateway has no ingress-http listener", lbIs("shop", nil))
	eventually(t, 30*time.Second, "a Warning Event naming the shape Ingress needs", func() bool {
		var evs eventsv1.EventList
		if err := env.Client.List(ctx, &evs, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		return slices.ContainsFunc(evs.Items, func(e eventsv1.Event) bool {
			return e.Regarding.Name == "shop" && strings.Contains(e.Note, "it must be ingress-http with protocol HTTP")
		})
	})
	awaitShop(false)
	setListenerName("ingress-http")
	eventually(t, 30*time.Second, "the load balancer status back", lbIs("shop", []string{svc.Spec.ClusterIP}))
	awaitShop(true)

	// The IngressClass goes: its Ingresses' routes and status go with it.
	if err := env.Client.Delete(ctx, ingressClass); err != nil {
		t.Fatal(err)
	}
	awaitShop(false)
	eventually(t, 30*time.Second, "the Ingress's load balancer status cleared", lbIs("shop", nil))
}

// ingressGateway creates, in namespace ns, a Gateway "web" with the
// design's ingress-http listener (its class of Isobar's controllerName),
// its Envoy Service, and an IngressClass whose parameters name it, which
// it returns.
func ingressGateway(t *testing.T, ctx context.Context, ns string) *networkingv1.IngressClass {
	t.Helper()
	class := &gatewayv1.GatewayClass{ObjectMeta: metav1.ObjectMeta{Name: "ingress-" + ns}, Spec: gatewayv1.GatewayClassSpec{ControllerName: controllerName}}
	ingressClass := &networkingv1.IngressClass{ObjectMeta: metav1.ObjectMeta{Name: "isobar-" + ns}, Spec: networkingv1.IngressClassSpec{
		Controller: controllerName,
		Parameters: &networkingv1.IngressClassParametersReference{APIGroup: ptr.To(gatewayv1.GroupName), Kind: "Gateway", Name: "web",
			Scope: ptr.To(networkingv1.IngressClassParametersReferenceScopeNamespace), Namespace: ptr.To(ns)},
	}}
	create(t, ctx, class, ingressClass,
		&gatewayv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}, Spec: gatewayv1.GatewaySpec{
			GatewayClassName: gatewayv1.ObjectName(class.Name),
			Listeners:        []gatewayv1.Listener{{Name: "ingress-http", Protocol: gatewayv1.HTTPProtocolType, Port: 80}},
		}},
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web-envoy"}, Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 80}}}},
	)
	t.Cleanup(func() {
		_ = env.Client.Delete(context.Background(), class)
		_ = env.Client.Delete(context.Background(), ingressClass)
	})
	return ingressClass
}

// The profile's ingress.statusAddress is what Ingresses' status gives,
// instead of the Gateway's address: the address behind an outer load
// balancer that external-dns should publish.
func TestIngressStatusAddress(t *testing.T) {
	ctx, cancel := harness.Context()
	defer cancel()
	ns := namespace(t)
	ingressClass := ingressGateway(t, ctx, ns)
	backend(t, ctx, ns, "app", "10.1.2.3")
	create(t, ctx, &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "shop"}, Spec: networkingv1.IngressSpec{
		IngressClassName: ptr.To(ingressClass.Name),
		DefaultBackend:   &networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: "app", Port: networkingv1.ServiceBackendPort{Name: "http"}}},
	}})
	settings := filepath.Join(t.TempDir(), "runtime.json")
	if err := os.WriteFile(settings, []byte(`{"ingress": {"statusAddress": "edge.example.com"}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	serve(t, ns, "web", nil, "--runtime-settings", settings)
	eventually(t, 30*time.Second, "the Ingress's load balancer status is the profile's edge.example.com", func() bool {
		i := &networkingv1.Ingress{}
		if err := env.Client.Get(ctx, keyOf(ns, "shop"), i); err != nil {
			t.Fatal(err)
		}
		lb := i.Status.LoadBalancer.Ingress
		return len(lb) == 1 && lb[0].Hostname == "edge.example.com" && lb[0].IP == ""
	})
}
