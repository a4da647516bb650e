package e2e

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"isobar.dev/e2e/harness"
	"isobar.dev/operator/pkg/render"
)

// The operator publishes the ports of the ListenerSets a Gateway allows on
// its Envoy Service (privileged ports mapped as the Gateway's own), not
// those of a ListenerSet the Gateway does not allow, and takes them back
// when the ListenerSet goes.
func TestOperatorListenerSetPorts(t *testing.T) {
	ns, other := namespace(t), namespace(t)
	ctx, cancel := harness.Context()
	defer cancel()
	controller := "isobar.dev/ls-" + ns
	operator(t, controller)
	class := &gatewayv1.GatewayClass{ObjectMeta: metav1.ObjectMeta{Name: "ls-" + ns}, Spec: gatewayv1.GatewayClassSpec{ControllerName: gatewayv1.GatewayController(controller)}}
	gw := &gatewayv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "shared"}, Spec: gatewayv1.GatewaySpec{
		GatewayClassName: gatewayv1.ObjectName(class.Name),
		Listeners:        []gatewayv1.Listener{{Name: "http", Protocol: gatewayv1.HTTPProtocolType, Port: 80}},
		AllowedListeners: &gatewayv1.AllowedListeners{Namespaces: &gatewayv1.ListenerNamespaces{From: ptr.To(gatewayv1.NamespacesFromSame)}},
	}}
	set := func(namespace, name string, listeners ...gatewayv1.ListenerEntry) *gatewayv1.ListenerSet {
		s := &gatewayv1.ListenerSet{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
		s.Spec.ParentRef = gatewayv1.ParentGatewayReference{Name: "shared", Namespace: ptr.To(gatewayv1.Namespace(ns))}
		s.Spec.Listeners = listeners
		return s
	}
	allowed := set(ns, "team", gatewayv1.ListenerEntry{Name: "dns", Protocol: gatewayv1.UDPProtocolType, Port: 53},
		gatewayv1.ListenerEntry{Name: "db", Protocol: gatewayv1.TCPProtocolType, Port: 9000})
	refused := set(other, "elsewhere", gatewayv1.ListenerEntry{Name: "extra", Protocol: gatewayv1.HTTPProtocolType, Port: 7000})
	create(t, ctx, class, gw, allowed, refused)
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), class) })

	ports := func() []string {
		svc := &corev1.Service{}
		if err := env.Client.Get(ctx, keyOf(ns, render.NamesOf(gw).Envoy), svc); err != nil {
			return nil
		}
		var out []string
		for _, p := range svc.Spec.Ports {
			out = append(out, fmt.Sprintf("%s %d->%s", p.Protocol, p.Port, p.TargetPort.String()))
		}
		return out
	}
	want := []string{"UDP 53->64565", "TCP 80->64592", "TCP 9000->9000"}
	var got []string
	eventually(t, 30*time.Second, fmt.Sprintf("Envoy Service ports %v", want), func() bool {
		got = ports()
		return slices.Equal(got, want)
	})
	if err := env.Client.Delete(ctx, allowed); err != nil {
		t.Fatal(err)
	}
	want = []string{"TCP 80->64592"}
	eventually(t, 30*time.Second, fmt.Sprintf("Envoy Service ports %v after the ListenerSet went (had %v)", want, got), func() bool {
		got = ports()
		return slices.Equal(got, want)
	})

	// Selected by namespace labels: labelling the other namespace brings
	// its ListenerSet's port, unlabelling takes it away.
	update := func(obj client.Object, change func()) {
		err := retry.RetryOnConflict(retry.DefaultBackoff, func() error {
			if err := env.Client.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
				return err
			}
			change()
			return env.Client.Update(ctx, obj)
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	update(gw, func() {
		gw.Spec.AllowedListeners.Namespaces = &gatewayv1.ListenerNamespaces{From: ptr.To(gatewayv1.NamespacesFromSelector),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"listeners": "shared-" + ns}}}
	})
	otherNS := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: other}}
	update(otherNS, func() { otherNS.Labels = map[string]string{"listeners": "shared-" + ns} })
	want = []string{"TCP 80->64592", "TCP 7000->7000"}
	eventually(t, 30*time.Second, fmt.Sprintf("Envoy Service ports %v once namespace %s is labelled", want, other), func() bool {
		got = ports()
		return slices.Equal(got, want)
	})
	update(otherNS, func() { delete(otherNS.Labels, "listeners") })
	want = []string{"TCP 80->64592"}
	eventually(t, 30*time.Second, fmt.Sprintf("Envoy Service ports %v once the label is gone (had %v)", want, got), func() bool {
		got = ports()
		return slices.Equal(got, want)
	})
}
