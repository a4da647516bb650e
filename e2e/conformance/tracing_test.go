package conformance

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	contourv1alpha1 "github.com/projectcontour/contour/apis/projectcontour/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	isobarv1alpha1 "isobar.dev/api/v1alpha1"
	"isobar.dev/e2e/otlpreceiver"
	"isobar.dev/e2e/rig"
)

// Tracing through a provisioned fleet: with the profile's tracing, the
// fleet's Envoy sends a span of each request to an OpenTelemetry
// collector running as a Pod behind an ExtensionService, over OTLP/gRPC:
// as the profile's service name, with the request's custom tag and the
// Envoy Pod's name and namespace. The Gateway says where its spans go.
func TestTracingThroughFleet(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster")
	}
	r := rig.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	const ns, class = "traced", "isobar-traced"
	objects := []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
		&isobarv1alpha1.ContourDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "traced"}, Spec: isobarv1alpha1.ContourDeploymentSpec{
			Envoy: isobarv1alpha1.EnvoySettings{NetworkPublishing: isobarv1alpha1.NetworkPublishing{Type: isobarv1alpha1.ClusterIPServicePublishing}},
			RuntimeSettings: isobarv1alpha1.RuntimeSettings{Tracing: &isobarv1alpha1.TracingSettings{
				ExtensionService: isobarv1alpha1.ObjectReference{Namespace: ns, Name: "otel"}, ServiceName: "fleet", IncludePodDetail: true,
				CustomTags: []isobarv1alpha1.CustomTag{{TagName: "team", RequestHeaderName: "X-Team"}},
			}},
		}},
		&gatewayv1.GatewayClass{ObjectMeta: metav1.ObjectMeta{Name: class}, Spec: gatewayv1.GatewayClassSpec{ControllerName: controllerName,
			ParametersRef: &gatewayv1.ParametersReference{Group: "isobar.dev", Kind: "ContourDeployment", Namespace: ptr.To(gatewayv1.Namespace(ns)), Name: "traced"}}},
		&gatewayv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}, Spec: gatewayv1.GatewaySpec{
			GatewayClassName: class,
			Listeners:        []gatewayv1.Listener{{Name: "http", Protocol: gatewayv1.HTTPProtocolType, Port: 80}},
		}},
		&contourv1alpha1.ExtensionService{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "otel"}, Spec: contourv1alpha1.ExtensionServiceSpec{
			Protocol: ptr.To("h2c"), Services: []contourv1alpha1.ExtensionServiceTarget{{Name: "otel", Port: 4317}},
		}},
		&gatewayv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app"}, Spec: gatewayv1.HTTPRouteSpec{
			CommonRouteSpec: gatewayv1.CommonRouteSpec{ParentRefs: []gatewayv1.ParentReference{{Name: "web"}}},
			Hostnames:       []gatewayv1.Hostname{"traced.example.com"},
			Rules: []gatewayv1.HTTPRouteRule{{BackendRefs: []gatewayv1.HTTPBackendRef{{BackendRef: gatewayv1.BackendRef{
				BackendObjectReference: gatewayv1.BackendObjectReference{Name: "echo", Port: ptr.To[gatewayv1.PortNumber](8080)}}}}}},
		}},
	}
	objects = slices.Concat(objects, serverWorkload(ns, "otel", rig.OTLPImage, "otlp-grpc", 4317), echoWorkload(ns, 1))
	for _, o := range objects {
		if err := r.Env.Client.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	address := gatewayAddress(t, ctx, r, types.NamespacedName{Namespace: ns, Name: "web"})
	get := func() int {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+address+"/orders", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Host = "traced.example.com"
		req.Header.Set("X-Team", "checkout")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	logs, err := kubernetes.NewForConfig(r.Fleet.Logs.Wrap(r.Env.Config))
	if err != nil {
		t.Fatal(err)
	}
	// The collector's log: a line of JSON per span.
	spans := func() []otlpreceiver.Span {
		pods := &corev1.PodList{}
		if err := r.Env.Client.List(ctx, pods, client.InNamespace(ns), client.MatchingLabels{"app": "otel"}); err != nil {
			t.Fatal(err)
		}
		var out []otlpreceiver.Span
		for _, p := range pods.Items {
			raw, err := logs.CoreV1().Pods(ns).GetLogs(p.Name, &corev1.PodLogOptions{}).DoRaw(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for line := range strings.SplitSeq(string(raw), "\n") {
				var s otlpreceiver.Span
				if json.Unmarshal([]byte(line), &s) == nil && s.Name != "" {
					out = append(out, s)
				}
			}
		}
		return out
	}
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(500 * time.Millisecond) {
		if get() == http.StatusOK && len(spans()) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("in two minutes: no 200 from GET http://traced.example.com/orders with a span at the collector (spans %+v)", spans())
		}
	}
	envoys := &corev1.PodList{}
	if err := r.Env.Client.List(ctx, envoys, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	var envoyPods []string
	for _, p := range envoys.Items {
		if strings.Contains(p.Name, "envoy") {
			envoyPods = append(envoyPods, p.Name)
		}
	}
	s := spans()[0]
	if s.Service != "fleet" || s.Name != "ingress" || s.Attributes["team"] != "checkout" || s.Attributes["podNamespaceName"] != ns ||
		!slices.Contains(envoyPods, s.Attributes["podName"]) || s.Attributes["http.status_code"] != "200" {
		t.Errorf("span %+v, want service fleet, ingress, team checkout, an Envoy Pod (%v) of namespace %s, status 200", s, envoyPods, ns)
	}
	gw := &gatewayv1.Gateway{}
	if err := r.Env.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: "web"}, gw); err != nil {
		t.Fatal(err)
	}
	if c := meta.FindStatusCondition(gw.Status.Conditions, "isobar.dev/Tracing"); c == nil || c.Status != metav1.ConditionTrue {
		t.Errorf("Gateway conditions %+v, want isobar.dev/Tracing True", gw.Status.Conditions)
	}
}
