package conformance

import (
	"context"
	"io"
	"net/http"
	"slices"
	"testing"
	"time"

	contourv1 "github.com/projectcontour/contour/apis/projectcontour/v1"
	contourv1alpha1 "github.com/projectcontour/contour/apis/projectcontour/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	isobarv1alpha1 "isobar.dev/api/v1alpha1"
	"isobar.dev/e2e/rig"
)

// HTTPProxy global rate limits through a provisioned fleet: the profile
// names a rate limit service (a real gRPC RateLimitService, run as a Pod
// behind an ExtensionService, limiting each descriptor to two requests a
// minute), and the fleet's Envoy asks it about each request a proxy's
// descriptors describe: the third request of a user is answered 429 with
// x-envoy-ratelimited and the x-ratelimit-* headers, another user has
// their own count, and a route that disables the policy is not asked
// about.
func TestHTTPProxyGlobalRateLimitsThroughFleet(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster")
	}
	r := rig.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	const ns, class, ingressClass = "limited-proxies", "isobar-ratelimited", "isobar-limited"
	objects := []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
		&isobarv1alpha1.ContourDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "ratelimited"}, Spec: isobarv1alpha1.ContourDeploymentSpec{
			Envoy: isobarv1alpha1.EnvoySettings{NetworkPublishing: isobarv1alpha1.NetworkPublishing{Type: isobarv1alpha1.ClusterIPServicePublishing}},
			RuntimeSettings: isobarv1alpha1.RuntimeSettings{HTTPProxy: &isobarv1alpha1.HTTPProxySettings{RateLimitService: &isobarv1alpha1.RateLimitServiceSettings{
				ExtensionService: isobarv1alpha1.ObjectReference{Namespace: ns, Name: "ratelimit"}, Domain: "fleet", EnableXRateLimitHeaders: true,
			}}},
		}},
		&gatewayv1.GatewayClass{ObjectMeta: metav1.ObjectMeta{Name: class}, Spec: gatewayv1.GatewayClassSpec{ControllerName: controllerName,
			ParametersRef: &gatewayv1.ParametersReference{Group: "isobar.dev", Kind: "ContourDeployment", Namespace: ptr.To(gatewayv1.Namespace(ns)), Name: "ratelimited"}}},
		ingressClassFor(ingressClass, ns),
		&gatewayv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}, Spec: gatewayv1.GatewaySpec{
			GatewayClassName: class,
			Listeners:        []gatewayv1.Listener{{Name: "ingress-http", Protocol: gatewayv1.HTTPProtocolType, Port: 80}},
		}},
		&contourv1alpha1.ExtensionService{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "ratelimit"}, Spec: contourv1alpha1.ExtensionServiceSpec{
			Protocol: ptr.To("h2c"), Services: []contourv1alpha1.ExtensionServiceTarget{{Name: "ratelimit", Port: 8081}},
			TimeoutPolicy: &contourv1.TimeoutPolicy{Response: "2s"},
		}},
		&contourv1.HTTPProxy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "shop"}, Spec: contourv1.HTTPProxySpec{
			IngressClassName: ingressClass,
			VirtualHost:      &contourv1.VirtualHost{Fqdn: "shop.example.com"},
			Routes: []contourv1.Route{
				{Services: echo(), RateLimitPolicy: &contourv1.RateLimitPolicy{Global: &contourv1.GlobalRateLimitPolicy{Descriptors: []contourv1.RateLimitDescriptor{{
					Entries: []contourv1.RateLimitDescriptorEntry{{RequestHeader: &contourv1.RequestHeaderDescriptor{HeaderName: "x-user", DescriptorKey: "user"}}},
				}}}}},
				{Conditions: []contourv1.MatchCondition{{Prefix: "/free"}}, Services: echo(),
					RateLimitPolicy: &contourv1.RateLimitPolicy{Global: &contourv1.GlobalRateLimitPolicy{Disabled: true}}},
			},
		}},
	}
	objects = slices.Concat(objects, serverWorkload(ns, "ratelimit", rig.RateLimitImage, "grpc", 8081, corev1.EnvVar{Name: "LIMIT", Value: "2"}), echoWorkload(ns, 1))
	for _, o := range objects {
		if err := r.Env.Client.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	address := gatewayAddress(t, ctx, r, types.NamespacedName{Namespace: ns, Name: "web"})
	get := func(path, user string) (int, http.Header) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+address+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Host = "shop.example.com"
		if user != "" {
			req.Header.Set("X-User", user)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, nil
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode, resp.Header
	}

	// Served, and the service answers (a user of its own: the probes
	// count against no one else).
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(500 * time.Millisecond) {
		status, h := get("/", "probe")
		if status == http.StatusOK && h.Get("X-Ratelimit-Limit") != "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("GET / as probe: %d %v in two minutes, want 200 with the rate limit service's headers", status, h)
		}
	}
	for i, tc := range []struct {
		path, user string
		status     int
		remaining  string
	}{
		{"/", "alice", 200, "1"},
		{"/", "alice", 200, "0"},
		{"/", "alice", 429, "0"},
		{"/", "bob", 200, "1"},
		{"/free", "alice", 200, ""},
	} {
		status, h := get(tc.path, tc.user)
		limited := h.Get("X-Envoy-Ratelimited") == "true"
		if status != tc.status || h.Get("X-Ratelimit-Remaining") != tc.remaining || limited != (tc.status == 429) {
			t.Errorf("request %d, GET %s as %s: %d %v, want %d with x-ratelimit-remaining %q", i, tc.path, tc.user, status, h, tc.status, tc.remaining)
		}
		if tc.remaining != "" && h.Get("X-Ratelimit-Limit") != "2, 2;w=60" {
			t.Errorf("request %d, GET %s as %s: x-ratelimit-limit %q, want the service's two a minute", i, tc.path, tc.user, h.Get("X-Ratelimit-Limit"))
		}
	}

	x := &contourv1alpha1.ExtensionService{}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(500 * time.Millisecond) {
		if err := r.Env.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: "ratelimit"}, x); err != nil {
			t.Fatal(err)
		}
		if len(x.Status.Conditions) == 1 && x.Status.Conditions[0].Status == contourv1.ConditionTrue {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("ExtensionService ratelimit: status %+v in a minute, want Valid", x.Status)
		}
	}
}
