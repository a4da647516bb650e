package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	contourv1 "github.com/projectcontour/contour/apis/projectcontour/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"isobar.dev/e2e/harness"
)

// An HTTPProxy that no Gateway serves, its ingress class missing, a route
// whose parentRef names a Gateway that does not exist and a Gateway whose
// class does not exist get a word from the live controller, which
// Kubernetes would not give: the
// controller whose Gateway controllerName mode would pick logs it with the
// reason and counts it, and logs again when it is gone or fixed.
func TestServeTellsWhatNoGatewayServes(t *testing.T) {
	ctx, cancel := harness.Context()
	defer cancel()
	ns := namespace(t)
	// A controllerName of the test's own, so that its Gateway is the one
	// controllerName mode picks, whatever other tests run.
	ours := "isobar.dev/unserved-" + ns
	class := &gatewayv1.GatewayClass{ObjectMeta: metav1.ObjectMeta{Name: "unserved-" + ns}, Spec: gatewayv1.GatewayClassSpec{ControllerName: gatewayv1.GatewayController(ours)}}
	create(t, ctx, class)
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), class) })
	create(t, ctx,
		&gatewayv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"},
			Spec: gatewayv1.GatewaySpec{GatewayClassName: gatewayv1.ObjectName(class.Name), Listeners: []gatewayv1.Listener{
				{Name: "http", Protocol: gatewayv1.HTTPProtocolType, Port: 80}}}},
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web-envoy"},
			Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 80}}}},
	)
	lost := &contourv1.HTTPProxy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "lost"}, Spec: contourv1.HTTPProxySpec{
		IngressClassName: "missing-" + ns,
		VirtualHost:      &contourv1.VirtualHost{Fqdn: "lost.example.com"},
		Routes:           []contourv1.Route{{Services: []contourv1.Service{{Name: "app", Port: 8080}}}},
	}}
	create(t, ctx, lost)
	// A route whose parentRef has a typo, kept by the controller as a stub
	// (it names another Gateway), and a Gateway whose class is missing.
	typo := &gatewayv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "typo"}, Spec: gatewayv1.HTTPRouteSpec{
		CommonRouteSpec: gatewayv1.CommonRouteSpec{ParentRefs: []gatewayv1.ParentReference{{Name: "webb"}}}}}
	create(t, ctx, typo,
		&gatewayv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "classless"},
			Spec: gatewayv1.GatewaySpec{GatewayClassName: gatewayv1.ObjectName("missing-" + ns), Listeners: []gatewayv1.Listener{
				{Name: "http", Protocol: gatewayv1.HTTPProtocolType, Port: 80}}}})
	s := serve(t, ns, "web", nil, "--controller-name", ours)

	logged := func(words ...string) func() bool {
		return func() bool {
			for _, line := range strings.Split(s.proc.Output(), "\n") {
				if all(line, words) {
					return true
				}
			}
			return false
		}
	}
	eventually(t, 30*time.Second, "the unserved HTTPProxy logged with its reason",
		logged(`not served`, `"name": "lost"`, `IngressClass \"missing-`+ns+`\" does not exist`))
	if got := scrape(t, s.metrics)[`isobar_unserved_objects{kind="HTTPProxy"}`]; got != 1 {
		t.Errorf(`isobar_unserved_objects{kind="HTTPProxy"} = %v, want 1`, got)
	}
	defer func() {
		if t.Failed() {
			t.Log(s.proc.Output())
		}
	}()
	eventually(t, 30*time.Second, "the route naming a Gateway that does not exist logged",
		logged(`not served`, `"kind": "HTTPRoute"`, `"name": "typo"`, `do not exist: `+ns+`/webb`))
	eventually(t, 30*time.Second, "the Gateway without a class logged",
		logged(`not served`, `"kind": "Gateway"`, `"name": "classless"`, `GatewayClass \"missing-`+ns+`\" does not exist`))
	// Other tests' objects count too: at least these.
	for _, kind := range []string{"HTTPRoute", "Gateway"} {
		if got := scrape(t, s.metrics)[`isobar_unserved_objects{kind="`+kind+`"}`]; got < 1 {
			t.Errorf(`isobar_unserved_objects{kind="%s"} = %v, want at least 1`, kind, got)
		}
	}
	if err := env.Client.Delete(ctx, lost); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "the HTTPProxy's going logged", logged(`no longer unserved`, `"name": "lost"`))
	// The typo fixed: the route names the served Gateway, and is served.
	typo.Spec.ParentRefs[0].Name = "web"
	if err := env.Client.Update(ctx, typo); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "the fixed route logged as served", logged(`no longer unserved`, `"name": "typo"`))
	if got := scrape(t, s.metrics)[`isobar_unserved_objects{kind="HTTPProxy"}`]; got != 0 {
		t.Errorf(`isobar_unserved_objects{kind="HTTPProxy"} = %v after it went, want 0`, got)
	}
}

func all(s string, words []string) bool {
	for _, w := range words {
		if !strings.Contains(s, w) {
			return false
		}
	}
	return true
}
