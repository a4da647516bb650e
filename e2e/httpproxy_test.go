package e2e

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	contourv1 "github.com/projectcontour/contour/apis/projectcontour/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"isobar.dev/api/certrefs"
	"isobar.dev/e2e/harness"
	"isobar.dev/operator/pkg/certs"
)

// A Gateway with the design's Ingress listeners serves the HTTPProxies of
// the IngressClass naming it, with the CRDs config/ installs: a root
// including a proxy of another namespace reaches a connected Envoy, and
// every proxy gets the status Contour writes (valid, orphaned), with the
// Gateway's address as its load balancer status; when the root stops
// including it, the included proxy becomes orphaned. An HTTPRoute with the
// same host and match as one of its routes takes precedence, and the root
// says so.
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
			Routes: []contourv1.Route{
				{Services: service("app")},
				{Conditions: []contourv1.MatchCondition{{Exact: "/health"}}, Services: service("app")},
			},
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

	// An HTTPRoute with the same host and match takes precedence: Envoy
	// sends /health to its backend, and the root says which route won.
	backend(t, ctx, ns, "health", "10.1.2.5")
	create(t, ctx, &gatewayv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "health"}, Spec: gatewayv1.HTTPRouteSpec{
		CommonRouteSpec: gatewayv1.CommonRouteSpec{ParentRefs: []gatewayv1.ParentReference{{Name: "web", SectionName: ptr.To(gatewayv1.SectionName("ingress-http"))}}},
		Hostnames:       []gatewayv1.Hostname{"shop.example.com"},
		Rules: []gatewayv1.HTTPRouteRule{{
			Matches:     []gatewayv1.HTTPRouteMatch{{Path: &gatewayv1.HTTPPathMatch{Type: ptr.To(gatewayv1.PathMatchExact), Value: ptr.To("/health")}}},
			BackendRefs: []gatewayv1.HTTPBackendRef{{BackendRef: gatewayv1.BackendRef{BackendObjectReference: gatewayv1.BackendObjectReference{Name: "health", Port: ptr.To(gatewayv1.PortNumber(8080))}}}},
		}},
	}})
	eventually(t, 30*time.Second, "the root warned that the HTTPRoute takes /health", func() bool {
		p := &contourv1.HTTPProxy{}
		if err := env.Client.Get(ctx, keyOf(ns, "shop"), p); err != nil {
			t.Fatal(err)
		}
		valid := p.Status.GetConditionFor(contourv1.ValidConditionType)
		if valid == nil || p.Status.CurrentStatus != "valid" {
			return false
		}
		w, ok := valid.GetWarning(contourv1.ConditionTypeRouteError)
		return ok && w.Reason == "RouteShadowed" && strings.Contains(w.Message, "HTTPRoute "+ns+"/health")
	})
	for deadline := time.Now().Add(30 * time.Second); ; {
		r := ads.next(resourcev3.RouteType, 10*time.Second)
		ads.ack(r)
		if clusterFor(t, r, "shop.example.com", "/health") == ns+"/health/8080" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("RDS sends shop.example.com/health to %q, want the HTTPRoute's backend", clusterFor(t, r, "shop.example.com", "/health"))
		}
	}
}

// clusterFor is the cluster of the route for exact path of the virtual
// host of domain in an RDS response, "" when there is none.
func clusterFor(t *testing.T, r *discoveryv3.DiscoveryResponse, domain, path string) string {
	t.Helper()
	for _, vh := range virtualHosts(t, r) {
		if !slices.Contains(vh.Domains, domain) {
			continue
		}
		for _, rt := range vh.Routes {
			if rt.GetMatch().GetPath() == path {
				return rt.GetRoute().GetCluster()
			}
		}
	}
	return ""
}

// A root HTTPProxy's TLS Secret in another namespace is served only while
// a TLSCertificateDelegation there delegates it to the root's namespace:
// the root is invalid (DelegationNotPermitted) and has no filter chain
// until the delegation is created, and again once it is deleted. The
// controller runs with the RBAC the operator renders once the delegation
// exists (certrefs names the delegated Secret).
func TestServeHTTPProxyDelegation(t *testing.T) {
	ctx, cancel := harness.Context()
	defer cancel()
	ns, certsNS := namespace(t), namespace(t)
	class := &gatewayv1.GatewayClass{ObjectMeta: metav1.ObjectMeta{Name: "delegation-" + ns}, Spec: gatewayv1.GatewayClassSpec{ControllerName: controllerName}}
	ingressClass := &networkingv1.IngressClass{ObjectMeta: metav1.ObjectMeta{Name: "isobar-" + ns}, Spec: networkingv1.IngressClassSpec{
		Controller: controllerName,
		Parameters: &networkingv1.IngressClassParametersReference{APIGroup: ptr.To(gatewayv1.GroupName), Kind: "Gateway", Name: "web",
			Scope: ptr.To(networkingv1.IngressClassParametersReferenceScopeNamespace), Namespace: ptr.To(ns)},
	}}
	gw := &gatewayv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}, Spec: gatewayv1.GatewaySpec{
		GatewayClassName: gatewayv1.ObjectName(class.Name),
		Listeners: []gatewayv1.Listener{
			{Name: "ingress-http", Protocol: gatewayv1.HTTPProtocolType, Port: 80},
			{Name: "ingress-https", Protocol: gatewayv1.HTTPSProtocolType, Port: 443,
				TLS: &gatewayv1.ListenerTLSConfig{CertificateRefs: []gatewayv1.SecretObjectReference{{Name: "default-tls"}}}},
		},
	}}
	issue := func(host string) map[string][]byte {
		ca, caKey, err := certs.NewCA(host, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		crt, key, err := certs.Issue(ca, caKey, []string{host}, true, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		return map[string][]byte{corev1.TLSCertKey: crt, corev1.TLSPrivateKeyKey: key}
	}
	root := &contourv1.HTTPProxy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "shop"}, Spec: contourv1.HTTPProxySpec{
		IngressClassName: ingressClass.Name,
		VirtualHost:      &contourv1.VirtualHost{Fqdn: "shop.example.com", TLS: &contourv1.TLS{SecretName: certsNS + "/shop-tls"}},
		Routes:           []contourv1.Route{{Services: []contourv1.Service{{Name: "app", Port: 8080}}}},
	}}
	delegation := &contourv1.TLSCertificateDelegation{ObjectMeta: metav1.ObjectMeta{Namespace: certsNS, Name: "shop"}, Spec: contourv1.TLSCertificateDelegationSpec{
		Delegations: []contourv1.CertificateDelegation{{SecretName: "shop-tls", TargetNamespaces: []string{ns}}},
	}}
	create(t, ctx, class, ingressClass, gw, root,
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web-envoy"}, Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 80}, {Name: "https", Port: 443}}}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "default-tls"}, Type: corev1.SecretTypeTLS, Data: issue("default.example.com")},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: certsNS, Name: "shop-tls"}, Type: corev1.SecretTypeTLS, Data: issue("shop.example.com")},
	)
	t.Cleanup(func() {
		_ = env.Client.Delete(context.Background(), class)
		_ = env.Client.Delete(context.Background(), ingressClass)
	})
	backend(t, ctx, ns, "app", "10.1.2.3")
	refs := certrefs.Of(certrefs.Input{Gateway: gw, ControllerName: string(controllerName), HTTPProxies: []*contourv1.HTTPProxy{root},
		IngressClasses: []*networkingv1.IngressClass{ingressClass}, TLSCertificateDelegations: []*contourv1.TLSCertificateDelegation{delegation}})
	if !slices.Contains(refs, certrefs.Ref{Kind: certrefs.Secret, Namespace: certsNS, Name: "shop-tls"}) {
		t.Fatalf("certrefs %v does not name the delegated Secret", refs)
	}
	s := serveWith(t, asRenderedController(t, ctx, gw, refs), ns, "web", nil)
	ads := newADSClient(t, dialXDS(t, s.pki, s.xds), "envoy-0", ns+"/web", resourcev3.ListenerType)
	serves := func(want bool) func() bool {
		return func() bool {
			r := ads.next(resourcev3.ListenerType, 10*time.Second)
			ads.ack(r)
			found := false
			for _, l := range resources[listenerv3.Listener](t, r) {
				for _, fc := range l.FilterChains {
					found = found || slices.Contains(fc.GetFilterChainMatch().GetServerNames(), "shop.example.com")
				}
			}
			return found == want
		}
	}
	rootStatus := func(want, reason string) func() bool {
		return func() bool {
			p := &contourv1.HTTPProxy{}
			if err := env.Client.Get(ctx, keyOf(ns, "shop"), p); err != nil {
				t.Fatal(err)
			}
			if p.Status.CurrentStatus != want {
				return false
			}
			if reason == "" {
				return true
			}
			valid := p.Status.GetConditionFor(contourv1.ValidConditionType)
			e, ok := valid.GetError(contourv1.ConditionTypeTLSError)
			return ok && e.Reason == reason
		}
	}
	eventually(t, 30*time.Second, "the root invalid without a delegation", rootStatus("invalid", "DelegationNotPermitted"))
	create(t, ctx, delegation)
	eventually(t, 30*time.Second, "the root valid once its Secret is delegated", rootStatus("valid", ""))
	eventually(t, 30*time.Second, "a filter chain for shop.example.com", serves(true))
	if err := env.Client.Delete(ctx, delegation); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "the root invalid once the delegation is withdrawn", rootStatus("invalid", "DelegationNotPermitted"))
	eventually(t, 30*time.Second, "no filter chain for shop.example.com", serves(false))
}
