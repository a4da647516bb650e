package routerule

import (
	"fmt"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"isobar.dev/controller/pkg/env"
	"isobar.dev/controller/pkg/resources"
)

// A route's rules are a function of the route and what it reads through
// the Env: the result says what the rules do and why some cannot, and the
// Reads hold every Dep the engine must watch for the result to stay true.
func TestHTTPRouteReadsThroughEnv(t *testing.T) {
	port := func(p int) *gatewayv1.PortNumber { n := gatewayv1.PortNumber(p); return &n }
	ns := func(s string) *gatewayv1.Namespace { n := gatewayv1.Namespace(s); return &n }
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "web"},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 80}}}}
	res := &resources.Resources{Services: []*corev1.Service{svc}}
	for _, tc := range []struct {
		name         string
		refs         []gatewayv1.HTTPBackendRef
		wantResolved string
		wantClusters []string
		wantReads    []env.Dep
	}{{
		name:         "a Service port",
		refs:         []gatewayv1.HTTPBackendRef{{BackendRef: gatewayv1.BackendRef{BackendObjectReference: gatewayv1.BackendObjectReference{Name: "web", Port: port(80)}}}},
		wantClusters: []string{"app/web/80"},
		wantReads:    []env.Dep{{Kind: env.Service, Key: types.NamespacedName{Namespace: "app", Name: "web"}}, {Kind: env.BackendTLS, Key: types.NamespacedName{Namespace: "app", Name: "web"}}},
	}, {
		name:         "a missing Service",
		refs:         []gatewayv1.HTTPBackendRef{{BackendRef: gatewayv1.BackendRef{BackendObjectReference: gatewayv1.BackendObjectReference{Name: "gone", Port: port(80)}}}},
		wantResolved: "{ResolvedRefs BackendNotFound Service app/gone does not exist}",
		wantClusters: []string{"absent/app/gone"},
		wantReads:    []env.Dep{{Kind: env.Service, Key: types.NamespacedName{Namespace: "app", Name: "gone"}}},
	}, {
		name:         "another namespace without a grant",
		refs:         []gatewayv1.HTTPBackendRef{{BackendRef: gatewayv1.BackendRef{BackendObjectReference: gatewayv1.BackendObjectReference{Name: "web", Namespace: ns("other"), Port: port(80)}}}},
		wantResolved: "{ResolvedRefs RefNotPermitted backendRef to Service other/web is not permitted: no ReferenceGrant in namespace other allows it}",
		wantReads:    []env.Dep{{Kind: env.Grants, Key: types.NamespacedName{Namespace: "other"}}},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			hr := &gatewayv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "r", Generation: 7},
				Spec: gatewayv1.HTTPRouteSpec{Rules: []gatewayv1.HTTPRouteRule{{BackendRefs: tc.refs}}}}
			var reads env.Reads
			rules := HTTPRoute(env.NewIndex(res, nil).Env(&reads), nil, hr)
			resolved := ""
			if p := rules.Unresolved; p != nil {
				resolved = fmt.Sprintf("{%s %s %s}", p.Type, p.Reason, p.Message)
			}
			if resolved != tc.wantResolved {
				t.Errorf("Resolved = %s, want %s", resolved, tc.wantResolved)
			}
			var clusters []string
			for _, c := range rules.Clusters {
				clusters = append(clusters, c.Name)
			}
			if !slices.Equal(clusters, tc.wantClusters) {
				t.Errorf("Clusters = %v, want %v", clusters, tc.wantClusters)
			}
			if !slices.Equal(reads.Deps(), tc.wantReads) {
				t.Errorf("reads = %v, want %v", reads.Deps(), tc.wantReads)
			}
			if len(rules.Routes) != 1 || len(rules.Routes[0]) != 1 {
				t.Fatalf("Routes = %v, want one route for the one rule", rules.Routes)
			}
		})
	}
}
