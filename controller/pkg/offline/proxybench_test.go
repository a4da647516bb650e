package offline

import (
	"fmt"
	"testing"

	contourv1 "github.com/projectcontour/contour/apis/projectcontour/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kptr "k8s.io/utils/ptr"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"isobar.dev/controller/pkg/resources"
	"isobar.dev/controller/pkg/translate"
)

// BenchmarkHTTPProxyVsHTTPRoute translates the same routes written two
// ways, side by side: n root HTTPProxies, each including two proxies
// under /a and /b, and n HTTPRoutes of one hostname and those two rules.
// Both on a Gateway with the Ingress listeners, both stages, unchecked;
// TestSameRoutes checks that both serve the same routes.
func BenchmarkHTTPProxyVsHTTPRoute(b *testing.B) {
	for _, n := range sizes {
		for _, kind := range []string{"HTTPProxy", "HTTPRoute"} {
			res := sameRoutes(n, kind == "HTTPProxy")
			b.Run(fmt.Sprintf("routes=%d/kind=%s", n, kind), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					translateUnchecked(b, res)
				}
			})
		}
	}
}

// sameRoutes is a snapshot of n hosts, each with the routes /a and /b to
// one of ten Services, as HTTPProxies (a root and two included proxies per
// host) or as HTTPRoutes.
func sameRoutes(n int, proxies bool) *resources.Resources {
	const ns = "bench"
	res := &resources.Resources{
		GatewayClasses: []*gatewayv1.GatewayClass{{ObjectMeta: metav1.ObjectMeta{Name: "isobar"}, Spec: gatewayv1.GatewayClassSpec{ControllerName: DefaultControllerName}}},
		Gateways: []*gatewayv1.Gateway{{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}, Spec: gatewayv1.GatewaySpec{
			GatewayClassName: "isobar",
			Listeners:        []gatewayv1.Listener{{Name: "ingress-http", Protocol: gatewayv1.HTTPProtocolType, Port: 80}},
		}}},
		IngressClasses: []*networkingv1.IngressClass{{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: networkingv1.IngressClassSpec{
			Controller: string(DefaultControllerName),
			Parameters: &networkingv1.IngressClassParametersReference{APIGroup: kptr.To(gatewayv1.GroupName), Kind: "Gateway", Name: "web",
				Namespace: kptr.To(ns), Scope: kptr.To(networkingv1.IngressClassParametersReferenceScopeNamespace)},
		}}},
	}
	for i := range 10 {
		name := fmt.Sprintf("svc-%d", i)
		res.Services = append(res.Services, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 80}}}})
		res.EndpointSlices = append(res.EndpointSlices, &discoveryv1.EndpointSlice{
			ObjectMeta:  metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{discoveryv1.LabelServiceName: name}},
			AddressType: discoveryv1.AddressTypeIPv4,
			Ports:       []discoveryv1.EndpointPort{{Name: kptr.To("http"), Port: kptr.To[int32](8080)}},
			Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{fmt.Sprintf("10.0.0.%d", i+1)}}},
		})
	}
	for i := range n {
		host := fmt.Sprintf("host-%d.example.com", i)
		svc := fmt.Sprintf("svc-%d", i%10)
		created := metav1.Unix(int64(1700000000+i), 0)
		if !proxies {
			rule := func(prefix string) gatewayv1.HTTPRouteRule {
				return gatewayv1.HTTPRouteRule{
					Matches:     []gatewayv1.HTTPRouteMatch{{Path: &gatewayv1.HTTPPathMatch{Type: kptr.To(gatewayv1.PathMatchPathPrefix), Value: kptr.To(prefix)}}},
					BackendRefs: []gatewayv1.HTTPBackendRef{{BackendRef: gatewayv1.BackendRef{BackendObjectReference: gatewayv1.BackendObjectReference{Name: gatewayv1.ObjectName(svc), Port: kptr.To[gatewayv1.PortNumber](80)}}}},
				}
			}
			res.HTTPRoutes = append(res.HTTPRoutes, &gatewayv1.HTTPRoute{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("route-%d", i), CreationTimestamp: created, Generation: 1},
				Spec: gatewayv1.HTTPRouteSpec{
					CommonRouteSpec: gatewayv1.CommonRouteSpec{ParentRefs: []gatewayv1.ParentReference{{Name: "web"}}},
					Hostnames:       []gatewayv1.Hostname{gatewayv1.Hostname(host)},
					Rules:           []gatewayv1.HTTPRouteRule{rule("/a"), rule("/b")},
				},
			})
			continue
		}
		child := func(name string) *contourv1.HTTPProxy {
			return &contourv1.HTTPProxy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, CreationTimestamp: created, Generation: 1}, Spec: contourv1.HTTPProxySpec{
				IngressClassName: "web",
				Routes:           []contourv1.Route{{Services: []contourv1.Service{{Name: svc, Port: 80}}}},
			}}
		}
		a, bb := child(fmt.Sprintf("proxy-%d-a", i)), child(fmt.Sprintf("proxy-%d-b", i))
		res.HTTPProxies = append(res.HTTPProxies, a, bb, &contourv1.HTTPProxy{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("proxy-%d", i), CreationTimestamp: created, Generation: 1},
			Spec: contourv1.HTTPProxySpec{
				IngressClassName: "web",
				VirtualHost:      &contourv1.VirtualHost{Fqdn: host},
				Includes: []contourv1.Include{
					{Name: a.Name, Conditions: []contourv1.MatchCondition{{Prefix: "/a"}}},
					{Name: bb.Name, Conditions: []contourv1.MatchCondition{{Prefix: "/b"}}},
				},
			},
		})
	}
	return res
}

// The two snapshots of BenchmarkHTTPProxyVsHTTPRoute serve the same
// routes: the benchmark compares like with like.
func TestSameRoutes(t *testing.T) {
	count := func(proxies bool) (hosts, routes int) {
		g := translate.Translate(sameRoutes(3, proxies), translate.Options{ControllerName: DefaultControllerName})
		for _, gw := range g.Gateways {
			for _, l := range gw.Listeners {
				if l.HTTP == nil {
					continue
				}
				for _, v := range l.HTTP.VirtualHosts {
					if len(v.Routes) > 0 && v.Name != "*" {
						hosts++
						routes += len(v.Routes)
					}
				}
			}
		}
		return hosts, routes
	}
	ph, pr := count(true)
	rh, rr := count(false)
	if ph != 3 || pr != 6 || ph != rh || pr != rr {
		t.Fatalf("HTTPProxies serve %d hosts and %d routes, HTTPRoutes %d and %d; want 3 and 6 both", ph, pr, rh, rr)
	}
}
