package conformance

import (
	"context"
	"net/http"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"isobar.dev/e2e/rig"
)

// externalAuth: a rule's ExternalAuth filter makes the fleet's Envoy ask
// an HTTP authorization server (the suite's echo server, which answers
// 200 for any path but /status/NNN's, whose status it answers) before it
// forwards: allowed, denied with the server's status, and denied with 403
// when the server has no endpoint.
func externalAuth(t *testing.T, r *rig.Rig) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	const ns = "authorized"
	echoRef := gatewayv1.BackendObjectReference{Name: "echo", Port: ptr.To[gatewayv1.PortNumber](8080)}
	rule := func(path string, auth gatewayv1.HTTPExternalAuthFilter) gatewayv1.HTTPRouteRule {
		return gatewayv1.HTTPRouteRule{
			Matches:     []gatewayv1.HTTPRouteMatch{{Path: &gatewayv1.HTTPPathMatch{Type: ptr.To(gatewayv1.PathMatchPathPrefix), Value: ptr.To(path)}}},
			Filters:     []gatewayv1.HTTPRouteFilter{{Type: gatewayv1.HTTPRouteFilterExternalAuth, ExternalAuth: &auth}},
			BackendRefs: []gatewayv1.HTTPBackendRef{{BackendRef: gatewayv1.BackendRef{BackendObjectReference: echoRef}}},
		}
	}
	objects := []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
		&gatewayv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}, Spec: gatewayv1.GatewaySpec{
			GatewayClassName: gatewayClassName,
			Listeners:        []gatewayv1.Listener{{Name: "http", Protocol: gatewayv1.HTTPProtocolType, Port: 80}},
		}},
		// A Service without Pods: an authorization server that is down.
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "nobody"}, Spec: corev1.ServiceSpec{
			Selector: map[string]string{"app": "nobody"}, Ports: []corev1.ServicePort{{Name: "http", Port: 8080}},
		}},
		&gatewayv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "shop"}, Spec: gatewayv1.HTTPRouteSpec{
			CommonRouteSpec: gatewayv1.CommonRouteSpec{ParentRefs: []gatewayv1.ParentReference{{Name: "web"}}},
			Hostnames:       []gatewayv1.Hostname{"shop.example.com"},
			Rules: []gatewayv1.HTTPRouteRule{
				rule("/allowed", gatewayv1.HTTPExternalAuthFilter{ExternalAuthProtocol: gatewayv1.HTTPRouteExternalAuthHTTPProtocol, BackendRef: echoRef,
					HTTPAuthConfig: &gatewayv1.HTTPAuthConfig{}}),
				rule("/denied", gatewayv1.HTTPExternalAuthFilter{ExternalAuthProtocol: gatewayv1.HTTPRouteExternalAuthHTTPProtocol, BackendRef: echoRef,
					HTTPAuthConfig: &gatewayv1.HTTPAuthConfig{Path: "/status/401"}}),
				rule("/down", gatewayv1.HTTPExternalAuthFilter{ExternalAuthProtocol: gatewayv1.HTTPRouteExternalAuthHTTPProtocol,
					BackendRef: gatewayv1.BackendObjectReference{Name: "nobody", Port: ptr.To[gatewayv1.PortNumber](8080)}, HTTPAuthConfig: &gatewayv1.HTTPAuthConfig{}}),
			},
		}},
	}
	createWithEcho(t, ctx, r, ns, 1, objects)
	address := gatewayAddress(t, ctx, r, types.NamespacedName{Namespace: ns, Name: "web"})
	awaitEcho(t, ctx, address, "shop.example.com", "/allowed", "an echo Pod once the server allows it")
	for _, tc := range []struct {
		path   string
		status int
	}{{"/denied", http.StatusBadRequest}, {"/down", http.StatusForbidden}} {
		// echo-basic answers a check of /status/401/denied 400: not its
		// /status/NNN path. Either way not 200, which denies.
		if status, pod, _ := echoGet(ctx, address, "shop.example.com", tc.path, nil); status != tc.status || pod != "" {
			t.Errorf("GET %s: %d from %q, want %d from Envoy, the backend never reached", tc.path, status, pod, tc.status)
		}
	}
}
