package conformance

import (
	"context"
	"net/http"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"isobar.dev/e2e/rig"
)

// defaultGateways: a route without parentRefs that asks for the default
// Gateways is served by the Gateway with defaultScope All, which its status
// names, until the Gateway stops being a default: then the route's entry
// and the Gateway's DefaultGateway condition go, and so do its requests.
func defaultGateways(t *testing.T, r *rig.Rig) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	const ns = "defaults"
	gwKey := types.NamespacedName{Namespace: ns, Name: "edge"}
	routeKey := types.NamespacedName{Namespace: ns, Name: "defaulted"}
	objects := []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
		&gatewayv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: gwKey.Name}, Spec: gatewayv1.GatewaySpec{
			GatewayClassName: gatewayClassName,
			DefaultScope:     gatewayv1.GatewayDefaultScopeAll,
			Listeners:        []gatewayv1.Listener{{Name: "http", Protocol: gatewayv1.HTTPProtocolType, Port: 80}},
		}},
		&gatewayv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: routeKey.Name}, Spec: gatewayv1.HTTPRouteSpec{
			CommonRouteSpec: gatewayv1.CommonRouteSpec{UseDefaultGateways: gatewayv1.GatewayDefaultScopeAll},
			Hostnames:       []gatewayv1.Hostname{"default.example.com"},
			Rules: []gatewayv1.HTTPRouteRule{{BackendRefs: []gatewayv1.HTTPBackendRef{{BackendRef: gatewayv1.BackendRef{
				BackendObjectReference: gatewayv1.BackendObjectReference{Name: "echo", Port: ptr.To[gatewayv1.PortNumber](8080)}}}}}},
		}},
	}
	createWithEcho(t, ctx, r, ns, 1, objects)
	address := gatewayAddress(t, ctx, r, gwKey)
	// eventually waits for ok, reporting what it last saw.
	eventually := func(what string, ok func() (bool, any)) {
		t.Helper()
		var last any
		for deadline := time.Now().Add(2 * time.Minute); ; {
			var done bool
			if done, last = ok(); done {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: not in two minutes (last: %+v)", what, last)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	entry := func() (*gatewayv1.RouteParentStatus, any) {
		hr := &gatewayv1.HTTPRoute{}
		if err := r.Env.Client.Get(ctx, routeKey, hr); err != nil {
			t.Fatal(err)
		}
		for i, p := range hr.Status.Parents {
			if p.ControllerName == controllerName && string(p.ParentRef.Name) == gwKey.Name && p.ParentRef.Namespace != nil && string(*p.ParentRef.Namespace) == ns {
				return &hr.Status.Parents[i], hr.Status
			}
		}
		return nil, hr.Status
	}
	defaultCondition := func() (*metav1.Condition, any) {
		gw := &gatewayv1.Gateway{}
		if err := r.Env.Client.Get(ctx, gwKey, gw); err != nil {
			t.Fatal(err)
		}
		return meta.FindStatusCondition(gw.Status.Conditions, "DefaultGateway"), gw.Status.Conditions
	}
	eventually("the defaulted route's status names the default Gateway, accepted", func() (bool, any) {
		e, st := entry()
		return e != nil && meta.IsStatusConditionTrue(e.Conditions, string(gatewayv1.RouteConditionAccepted)), st
	})
	eventually("the Gateway's DefaultGateway condition is true", func() (bool, any) {
		c, st := defaultCondition()
		return c != nil && c.Status == metav1.ConditionTrue, st
	})
	eventually("the default Gateway serves the defaulted route", func() (bool, any) {
		status, pod, _ := echoGet(ctx, address, "default.example.com", "/", nil)
		return status == http.StatusOK && pod != "", status
	})

	// The operator and the controller write the Gateway too (its status,
	// its finalizer): read it again on a conflict.
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		gw := &gatewayv1.Gateway{}
		if err := r.Env.Client.Get(ctx, gwKey, gw); err != nil {
			return err
		}
		gw.Spec.DefaultScope = ""
		return r.Env.Client.Update(ctx, gw)
	}); err != nil {
		t.Fatal(err)
	}
	eventually("the route's entry goes with the default", func() (bool, any) {
		e, st := entry()
		return e == nil, st
	})
	eventually("the DefaultGateway condition goes", func() (bool, any) {
		c, st := defaultCondition()
		return c == nil, st
	})
	eventually("the Gateway no longer serves the route", func() (bool, any) {
		status, _, _ := echoGet(ctx, address, "default.example.com", "/", nil)
		return status == http.StatusNotFound, status
	})
}
