package conformance

import (
	"context"
	"net"
	"net/http"
	"slices"
	"testing"
	"time"

	contourv1 "github.com/projectcontour/contour/apis/projectcontour/v1"
	contourv1alpha1 "github.com/projectcontour/contour/apis/projectcontour/v1alpha1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	isobarv1alpha1 "isobar.dev/api/v1alpha1"
	"isobar.dev/e2e/rig"
)

// Global external authorization through a provisioned fleet: the profile
// names an authorization server (a real gRPC server, run as a Pod behind
// an ExtensionService, allowing alice's token alone), and the fleet's
// Envoy asks it about every request of an HTTPRoute, an Ingress and
// HTTPProxies on one Gateway, plain and TLS. Allowed requests reach the
// echo Pod with the server's headers and the profile's context (a route's
// context merged over it); denied ones get the server's answer; an
// HTTPProxy route that opts out is not checked. The Gateway says the
// server checks its routes.
func TestGlobalExtAuthThroughFleet(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster")
	}
	r := rig.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	const ns, class, ingressClass = "global-auth", "isobar-global-auth", "isobar-global-auth-routes"
	objects := tlsGateway(t, ns, ingressClass)
	for _, o := range objects {
		if gw, ok := o.(*gatewayv1.Gateway); ok {
			gw.Spec.GatewayClassName = class
		}
	}
	objects = slices.Concat(objects, []client.Object{
		&isobarv1alpha1.ContourDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "checked"}, Spec: isobarv1alpha1.ContourDeploymentSpec{
			Envoy: isobarv1alpha1.EnvoySettings{NetworkPublishing: isobarv1alpha1.NetworkPublishing{Type: isobarv1alpha1.ClusterIPServicePublishing}},
			RuntimeSettings: isobarv1alpha1.RuntimeSettings{GlobalExtAuth: &isobarv1alpha1.GlobalExtAuthSettings{
				ExtensionService: isobarv1alpha1.ObjectReference{Namespace: ns, Name: "authz"},
				AuthPolicy:       &isobarv1alpha1.GlobalAuthPolicy{Context: map[string]string{"scope": "global"}},
				ResponseTimeout:  &metav1.Duration{Duration: 2 * time.Second},
			}},
		}},
		&gatewayv1.GatewayClass{ObjectMeta: metav1.ObjectMeta{Name: class}, Spec: gatewayv1.GatewayClassSpec{ControllerName: controllerName,
			ParametersRef: &gatewayv1.ParametersReference{Group: "isobar.dev", Kind: "ContourDeployment", Namespace: ptr.To(gatewayv1.Namespace(ns)), Name: "checked"}}},
		&contourv1alpha1.ExtensionService{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "authz"}, Spec: contourv1alpha1.ExtensionServiceSpec{
			Protocol: ptr.To("h2c"), Services: []contourv1alpha1.ExtensionServiceTarget{{Name: "authz", Port: 9000}},
		}},
		&gatewayv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "route"}, Spec: gatewayv1.HTTPRouteSpec{
			CommonRouteSpec: gatewayv1.CommonRouteSpec{ParentRefs: []gatewayv1.ParentReference{{Name: "web"}}},
			Hostnames:       []gatewayv1.Hostname{"route.example.com"},
			Rules: []gatewayv1.HTTPRouteRule{{BackendRefs: []gatewayv1.HTTPBackendRef{{BackendRef: gatewayv1.BackendRef{BackendObjectReference: gatewayv1.BackendObjectReference{
				Name: "echo", Port: ptr.To(gatewayv1.PortNumber(8080)),
			}}}}}},
		}},
		&networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "ingress"}, Spec: networkingv1.IngressSpec{
			IngressClassName: ptr.To(ingressClass),
			Rules: []networkingv1.IngressRule{{Host: "ingress.example.com", IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{
				Paths: []networkingv1.HTTPIngressPath{{Path: "/", PathType: ptr.To(networkingv1.PathTypePrefix), Backend: networkingv1.IngressBackend{
					Service: &networkingv1.IngressServiceBackend{Name: "echo", Port: networkingv1.ServiceBackendPort{Number: 8080}},
				}}},
			}}}},
		}},
		&contourv1.HTTPProxy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "proxy"}, Spec: contourv1.HTTPProxySpec{
			IngressClassName: ingressClass,
			VirtualHost:      &contourv1.VirtualHost{Fqdn: "proxy.example.com"},
			Routes: []contourv1.Route{
				{Services: echo()},
				{Conditions: []contourv1.MatchCondition{{Prefix: "/public"}}, Services: echo(), AuthPolicy: &contourv1.AuthorizationPolicy{Disabled: true}},
				{Conditions: []contourv1.MatchCondition{{Prefix: "/admin"}}, Services: echo(), AuthPolicy: &contourv1.AuthorizationPolicy{Context: map[string]string{"tier": "admin"}}},
			},
		}},
		&contourv1.HTTPProxy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "secure"}, Spec: contourv1.HTTPProxySpec{
			IngressClassName: ingressClass,
			VirtualHost:      &contourv1.VirtualHost{Fqdn: "secure.example.com", TLS: &contourv1.TLS{SecretName: "example-tls"}},
			Routes:           []contourv1.Route{{Services: echo()}},
		}},
	}, serverWorkload(ns, "authz", rig.AuthzImage, "grpc", 9000), echoWorkload(ns, 1))
	for _, o := range objects {
		if err := r.Env.Client.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	address := gatewayAddress(t, ctx, r, types.NamespacedName{Namespace: ns, Name: "web"})
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		t.Fatal(err)
	}
	secure := net.JoinHostPort(host, "443")
	get := func(tls bool, host, path, user string) echoed {
		if tls {
			return tlsGet(ctx, secure, host, path, user)
		}
		return plainGet(ctx, address, host, path, user)
	}

	// Served once the server allows alice everywhere.
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(500 * time.Millisecond) {
		a, b := get(false, "route.example.com", "/", "alice"), get(true, "secure.example.com", "/", "alice")
		if a.status == http.StatusOK && a.Pod != "" && b.status == http.StatusOK && b.Pod != "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("GET http://route.example.com/ and https://secure.example.com/ as alice: %d %q and %d %q in two minutes, want 200 from an echo Pod once the server allows it",
				a.status, a.body, b.status, b.body)
		}
	}
	for _, tc := range []struct {
		tls              bool
		host, path, user string
		status           int
		// reached says the echo Pod answered; then context is the
		// x-auth-context it got from the server ("" for none, when the
		// request was not checked).
		reached bool
		context string
	}{
		{host: "route.example.com", path: "/", user: "alice", status: 200, reached: true, context: "scope=global"},
		{host: "route.example.com", path: "/", user: "bob", status: 401},
		{tls: true, host: "route.example.com", path: "/", user: "alice", status: 200, reached: true, context: "scope=global"},
		{tls: true, host: "route.example.com", path: "/", user: "bob", status: 401},
		{host: "ingress.example.com", path: "/", user: "alice", status: 200, reached: true, context: "scope=global"},
		{host: "ingress.example.com", path: "/", user: "bob", status: 401},
		{host: "proxy.example.com", path: "/", user: "alice", status: 200, reached: true, context: "scope=global"},
		{host: "proxy.example.com", path: "/", user: "bob", status: 401},
		{host: "proxy.example.com", path: "/admin", user: "alice", status: 200, reached: true, context: "scope=global,tier=admin"},
		{host: "proxy.example.com", path: "/public", user: "bob", status: 200, reached: true},
		{tls: true, host: "secure.example.com", path: "/", user: "alice", status: 200, reached: true, context: "scope=global"},
		{tls: true, host: "secure.example.com", path: "/", user: "bob", status: 401},
	} {
		got := get(tc.tls, tc.host, tc.path, tc.user)
		scheme := map[bool]string{false: "http://", true: "https://"}[tc.tls]
		what := "GET " + scheme + tc.host + tc.path + " as " + tc.user
		if got.status != tc.status || (got.Pod != "") != tc.reached {
			t.Errorf("%s: %d %q from %q, want %d (from an echo Pod: %v)", what, got.status, got.body, got.Pod, tc.status, tc.reached)
			continue
		}
		if !tc.reached && got.body != "who are you?" {
			t.Errorf("%s: body %q, want the server's %q", what, got.body, "who are you?")
		}
		wantUser := ""
		if tc.context != "" {
			wantUser = "alice (grpc)"
		}
		if h := got.Headers; tc.reached && (first(h["X-Auth-User"]) != wantUser || first(h["X-Auth-Context"]) != tc.context) {
			t.Errorf("%s: the backend got x-auth-user %q and x-auth-context %q, want %q and %q", what, h["X-Auth-User"], h["X-Auth-Context"], wantUser, tc.context)
		}
	}

	// The Gateway says its routes are checked.
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(500 * time.Millisecond) {
		gw := &gatewayv1.Gateway{}
		if err := r.Env.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: "web"}, gw); err != nil {
			t.Fatal(err)
		}
		i := slices.IndexFunc(gw.Status.Conditions, func(c metav1.Condition) bool { return c.Type == "isobar.dev/ExternalAuthorization" })
		if i >= 0 && gw.Status.Conditions[i].Status == metav1.ConditionTrue {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Gateway web: conditions %+v in a minute, want isobar.dev/ExternalAuthorization True", gw.Status.Conditions)
		}
	}
}
