package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"isobar.dev/e2e/harness"
)

// controllerName mode (Contour's Gateway API design): without --gateway the controller serves
// the oldest Gateway of the oldest GatewayClass with its controllerName,
// tells the others why not, and moves on to the next when that Gateway
// goes away.
func TestServeControllerNameMode(t *testing.T) {
	ns := namespace(t)
	ctx, cancel := harness.Context()
	defer cancel()
	controller := "isobar.dev/static-" + ns
	// Created within the same second, ages tie and names decide: a-... is
	// the older class, "first" the older Gateway.
	classes := []*gatewayv1.GatewayClass{
		{ObjectMeta: metav1.ObjectMeta{Name: "a-" + ns}, Spec: gatewayv1.GatewayClassSpec{ControllerName: gatewayv1.GatewayController(controller)}},
		{ObjectMeta: metav1.ObjectMeta{Name: "b-" + ns}, Spec: gatewayv1.GatewayClassSpec{ControllerName: gatewayv1.GatewayController(controller)}},
	}
	for _, c := range classes {
		create(t, ctx, c)
		t.Cleanup(func() { _ = env.Client.Delete(context.Background(), c) })
	}
	gateway := func(name, class string) *gatewayv1.Gateway {
		return &gatewayv1.Gateway{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: gatewayv1.GatewaySpec{GatewayClassName: gatewayv1.ObjectName(class), Listeners: []gatewayv1.Listener{
				{Name: "http", Protocol: gatewayv1.HTTPProtocolType, Port: 80},
			}},
		}
	}
	first, second, other := gateway("first", classes[0].Name), gateway("second", classes[0].Name), gateway("other", classes[1].Name)
	create(t, ctx, first, second, other,
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "envoy"}, Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 80}}}})
	s := serve(t, ns, "", nil, "--controller-name", controller, "--envoy-service", ns+"/envoy")

	classCondition := func(name string, status metav1.ConditionStatus, reason, message string) {
		t.Helper()
		eventually(t, 30*time.Second, "class "+name+" Accepted "+string(status)+" "+reason, func() bool {
			c := &gatewayv1.GatewayClass{}
			if err := env.Client.Get(ctx, keyOf("", name), c); err != nil {
				t.Fatal(err)
			}
			a := meta.FindStatusCondition(c.Status.Conditions, "Accepted")
			return a != nil && a.Status == status && a.Reason == reason && strings.Contains(a.Message, message) &&
				a.ObservedGeneration == c.Generation && (status == metav1.ConditionFalse || len(c.Status.SupportedFeatures) > 0)
		})
	}
	classCondition(classes[0].Name, metav1.ConditionTrue, "Accepted", "")
	classCondition(classes[1].Name, metav1.ConditionFalse, "Unsupported", classes[0].Name)
	waitGatewayCondition(t, ctx, ns, "first", "Accepted", metav1.ConditionTrue, "Accepted", "")
	waitGatewayCondition(t, ctx, ns, "second", "Accepted", metav1.ConditionFalse, "Pending", ns+"/first")
	waitGatewayCondition(t, ctx, ns, "other", "Accepted", metav1.ConditionFalse, "Pending", classes[1].Name)

	ads := newADSClient(t, dialXDS(t, s.pki, s.xds), "envoy-0", ns+"/first", resourcev3.ListenerType)
	if ls := resources[listenerv3.Listener](t, ads.next(resourcev3.ListenerType, 10*time.Second)); len(ls) != 1 || ls[0].Name != "http_80" {
		t.Fatalf("LDS %v, want http_80", ls)
	}

	// The served Gateway goes away: the next oldest takes its place.
	if err := env.Client.Delete(ctx, first); err != nil {
		t.Fatal(err)
	}
	waitGatewayCondition(t, ctx, ns, "second", "Accepted", metav1.ConditionTrue, "Accepted", "")
}
