package profile

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"isobar.dev/api/v1alpha1"
)

// The operator's watches, ContourDeployment status and the resolution all
// match parametersRefs through ClassRef and GatewayRef: a ref they accept
// must be one ForClass and ForGateway resolve, and the reverse.
func TestRefsMatchResolution(t *testing.T) {
	ns := gatewayv1.Namespace("profiles")
	empty := gatewayv1.Namespace("")
	cd := &v1alpha1.ContourDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: "profiles", Name: "p"}}
	gwCD := &v1alpha1.ContourDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "p"}}
	lookup := func(k types.NamespacedName) (*v1alpha1.ContourDeployment, error) {
		for _, c := range []*v1alpha1.ContourDeployment{cd, gwCD} {
			if k == (types.NamespacedName{Namespace: c.Namespace, Name: c.Name}) {
				return c, nil
			}
		}
		return nil, nil
	}
	group := gatewayv1.Group(v1alpha1.GroupVersion.Group)
	for _, tc := range []struct {
		name string
		ref  *gatewayv1.ParametersReference
		want types.NamespacedName
		ok   bool
	}{
		{"none", nil, types.NamespacedName{}, false},
		{"ContourDeployment", &gatewayv1.ParametersReference{Group: group, Kind: "ContourDeployment", Name: "p", Namespace: &ns}, types.NamespacedName{Namespace: "profiles", Name: "p"}, true},
		{"no namespace", &gatewayv1.ParametersReference{Group: group, Kind: "ContourDeployment", Name: "p"}, types.NamespacedName{}, false},
		{"empty namespace", &gatewayv1.ParametersReference{Group: group, Kind: "ContourDeployment", Name: "p", Namespace: &empty}, types.NamespacedName{}, false},
		{"another kind", &gatewayv1.ParametersReference{Group: "", Kind: "ConfigMap", Name: "p", Namespace: &ns}, types.NamespacedName{}, false},
		{"another group", &gatewayv1.ParametersReference{Group: "example.com", Kind: "ContourDeployment", Name: "p", Namespace: &ns}, types.NamespacedName{}, false},
	} {
		t.Run("class/"+tc.name, func(t *testing.T) {
			gc := &gatewayv1.GatewayClass{Spec: gatewayv1.GatewayClassSpec{ParametersRef: tc.ref}}
			got, ok := ClassRef(gc)
			if got != tc.want || ok != tc.ok {
				t.Fatalf("ClassRef = %v, %v; want %v, %v", got, ok, tc.want, tc.ok)
			}
			p, err := ForClass(gc, lookup)
			resolved := err == nil && len(p.Sources) == 1 && p.Sources[0] == got
			if tc.ref != nil && resolved != ok {
				t.Fatalf("ForClass resolved %v (%v), ClassRef said %v", resolved, err, ok)
			}
		})
	}
	for _, tc := range []struct {
		name string
		ref  *gatewayv1.LocalParametersReference
		ok   bool
	}{
		{"none", nil, false},
		{"ContourDeployment", &gatewayv1.LocalParametersReference{Group: group, Kind: "ContourDeployment", Name: "p"}, true},
		{"another kind", &gatewayv1.LocalParametersReference{Group: "", Kind: "ConfigMap", Name: "p"}, false},
	} {
		t.Run("gateway/"+tc.name, func(t *testing.T) {
			gw := &gatewayv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "gw"}}
			if tc.ref != nil {
				gw.Spec.Infrastructure = &gatewayv1.GatewayInfrastructure{ParametersRef: tc.ref}
			}
			got, ok := GatewayRef(gw)
			want := types.NamespacedName{}
			if tc.ok {
				want = types.NamespacedName{Namespace: "apps", Name: "p"}
			}
			if got != want || ok != tc.ok {
				t.Fatalf("GatewayRef = %v, %v; want %v, %v", got, ok, want, tc.ok)
			}
			p, err := ForGateway(gw, &Profile{}, lookup)
			if tc.ref != nil && (err == nil && len(p.Sources) == 1 && p.Sources[0] == got) != ok {
				t.Fatalf("ForGateway = %v, %v; GatewayRef said %v", p, err, ok)
			}
		})
	}
}
