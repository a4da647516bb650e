package conformance

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	gatewayxv1alpha1 "sigs.k8s.io/gateway-api/apisx/v1alpha1"

	"isobar.dev/e2e/rig"
)

// xbackends: a route to an XBackend reaches the host it names (the echo
// Service's DNS name, which the simulated Envoys resolve as cluster DNS
// does); an XBackend that cannot be used answers 500 and says why on its
// status, for the Gateway, and on the route's.
func xbackends(t *testing.T, r *rig.Rig) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	const ns = "external-backends"
	xbackend := func(name, host string, tls *gatewayxv1alpha1.BackendTLS) *gatewayxv1alpha1.XBackend {
		return &gatewayxv1alpha1.XBackend{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: gatewayxv1alpha1.BackendSpec{
			Type:             gatewayxv1alpha1.BackendTypeExternalHostname,
			ExternalHostname: &gatewayxv1alpha1.ExternalHostnameBackend{Hostname: gatewayv1.PreciseHostname(host)},
			Port:             gatewayxv1alpha1.BackendPort{Port: 8080},
			TLS:              tls,
		}}
	}
	rule := func(path, backend string) gatewayv1.HTTPRouteRule {
		return gatewayv1.HTTPRouteRule{
			Matches: []gatewayv1.HTTPRouteMatch{{Path: &gatewayv1.HTTPPathMatch{Type: ptr.To(gatewayv1.PathMatchPathPrefix), Value: ptr.To(path)}}},
			BackendRefs: []gatewayv1.HTTPBackendRef{{BackendRef: gatewayv1.BackendRef{BackendObjectReference: gatewayv1.BackendObjectReference{
				Group: ptr.To[gatewayv1.Group]("gateway.networking.x-k8s.io"), Kind: ptr.To[gatewayv1.Kind]("XBackend"), Name: gatewayv1.ObjectName(backend)}}}},
		}
	}
	objects := []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
		&gatewayv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}, Spec: gatewayv1.GatewaySpec{
			GatewayClassName: gatewayClassName,
			Listeners:        []gatewayv1.Listener{{Name: "http", Protocol: gatewayv1.HTTPProtocolType, Port: 80}},
		}},
		xbackend("echo", "echo."+ns+".svc", nil),
		xbackend("broken", "secure.example.net", &gatewayxv1alpha1.BackendTLS{Mode: gatewayxv1alpha1.BackendTLSModeServerOnly,
			Validation: gatewayv1.BackendTLSPolicyValidation{Hostname: "secure.example.net",
				CACertificateRefs: []gatewayv1.LocalObjectReference{{Kind: "ConfigMap", Name: "no-such-ca"}}}}),
		&gatewayv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "shop"}, Spec: gatewayv1.HTTPRouteSpec{
			CommonRouteSpec: gatewayv1.CommonRouteSpec{ParentRefs: []gatewayv1.ParentReference{{Name: "web"}}},
			Hostnames:       []gatewayv1.Hostname{"shop.example.com"},
			Rules:           []gatewayv1.HTTPRouteRule{rule("/external", "echo"), rule("/broken", "broken")},
		}},
	}
	createWithEcho(t, ctx, r, ns, 1, objects)
	address := gatewayAddress(t, ctx, r, types.NamespacedName{Namespace: ns, Name: "web"})
	awaitEcho(t, ctx, address, "shop.example.com", "/external", "the echo Pod behind the XBackend's host")
	if status, pod, _ := echoGet(ctx, address, "shop.example.com", "/broken", nil); status != http.StatusInternalServerError || pod != "" {
		t.Errorf("GET /broken: %d from %q, want 500 from Envoy for an XBackend that cannot be used", status, pod)
	}

	// Each XBackend's status has the Gateway's entry.
	accepted := func(name string) *metav1.Condition {
		b := &gatewayxv1alpha1.XBackend{}
		if err := r.Env.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, b); err != nil {
			t.Fatal(err)
		}
		for _, a := range b.Status.Ancestors {
			if a.ControllerName == gatewayv1.GatewayController(controllerName) && a.AncestorRef.Name == "web" {
				for i := range a.Conditions {
					if a.Conditions[i].Type == string(gatewayv1.PolicyConditionAccepted) {
						return &a.Conditions[i]
					}
				}
			}
		}
		return nil
	}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(500 * time.Millisecond) {
		good, bad := accepted("echo"), accepted("broken")
		if good != nil && good.Status == metav1.ConditionTrue && bad != nil && bad.Status == metav1.ConditionFalse &&
			bad.Reason == string(gatewayv1.PolicyReasonInvalid) && strings.Contains(bad.Message, "no-such-ca") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("XBackend status for Gateway web: echo %+v, broken %+v; want Accepted True, and False (Invalid) naming the missing CA", good, bad)
		}
	}
	route := &gatewayv1.HTTPRoute{}
	if err := r.Env.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: "shop"}, route); err != nil {
		t.Fatal(err)
	}
	var resolved *metav1.Condition
	for _, p := range route.Status.Parents {
		for i, c := range p.Conditions {
			if c.Type == string(gatewayv1.RouteConditionResolvedRefs) {
				resolved = &p.Conditions[i]
			}
		}
	}
	if resolved == nil || resolved.Status != metav1.ConditionFalse || resolved.Reason != "XBackendNotAccepted" {
		t.Errorf("route ResolvedRefs %+v, want False (XBackendNotAccepted)", resolved)
	}
}
