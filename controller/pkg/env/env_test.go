package env

import (
	"maps"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	contourv1 "github.com/projectcontour/contour/apis/projectcontour/v1"
	contourv1alpha1 "github.com/projectcontour/contour/apis/projectcontour/v1alpha1"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	gatewayxv1alpha1 "sigs.k8s.io/gateway-api/apisx/v1alpha1"

	"isobar.dev/api/refgrant"
	"isobar.dev/controller/pkg/resources"
)

// Every way an Env reads records a Dep, and Changed compares every Kind:
// a new accessor that is not in this table fails the test, so a read that
// the engine would not know of cannot be added unnoticed.
func TestEveryReadIsRecorded(t *testing.T) {
	svc := types.NamespacedName{Namespace: "ns", Name: "svc"}
	reads := map[string]struct {
		read func(Env)
		want Dep
	}{
		"Service":          {func(e Env) { e.Service("ns", "svc") }, Dep{Service, svc}},
		"ServicePort":      {func(e Env) { e.ServicePort("ns", "svc", "http") }, Dep{Service, svc}},
		"Granted":          {func(e Env) { e.Granted(refgrant.From{}, "ns", refgrant.To{}) }, Dep{Grants, key("ns", "")}},
		"NamespaceLabels":  {func(e Env) { e.NamespaceLabels("ns") }, Dep{Namespace, key("ns", "")}},
		"Secret":           {func(e Env) { e.Secret("ns", "svc") }, Dep{Secret, svc}},
		"ConfigMap":        {func(e Env) { e.ConfigMap("ns", "svc") }, Dep{ConfigMap, svc}},
		"Unserved":         {func(e Env) { e.Unserved("TCPRoute") }, Dep{RouteKinds, key("", "")}},
		"UnservedKinds":    {func(e Env) { e.UnservedKinds() }, Dep{RouteKinds, key("", "")}},
		"BackendTLS":       {func(e Env) { e.BackendTLS(svc, "http") }, Dep{BackendTLS, svc}},
		"HTTPProxy":        {func(e Env) { e.HTTPProxy("ns", "svc") }, Dep{HTTPProxy, svc}},
		"ExtensionService": {func(e Env) { e.ExtensionService("ns", "svc") }, Dep{ExtensionService, svc}},
		"XBackend":         {func(e Env) { e.XBackend("ns", "svc") }, Dep{XBackend, svc}},
		"BackendTraffic":   {func(e Env) { e.BackendTraffic(svc) }, Dep{Service, svc}},
		"Granted to an HTTPProxy": {func(e Env) {
			e.Granted(refgrant.From{Group: contourv1.GroupName, Kind: "HTTPProxy", Namespace: "other"}, "ns", refgrant.To{Kind: "Secret", Name: "svc"})
		}, Dep{Delegations, key("ns", "")}},
	}
	typ := reflect.TypeFor[Env]()
	for i := range typ.NumMethod() {
		if _, ok := reads[typ.Method(i).Name]; !ok {
			t.Errorf("Env.%s is not in this test: say which Dep it records", typ.Method(i).Name)
		}
	}
	idx := NewIndex(&resources.Resources{}, nil)
	for name, r := range reads {
		var got Reads
		r.read(idx.Env(&got))
		if !slices.Equal(got.Deps(), []Dep{r.want}) {
			t.Errorf("Env.%s recorded %v, want [%v]", name, got.Deps(), r.want)
		}
	}
	kinds := map[Kind]bool{}
	for _, r := range reads {
		kinds[r.want.Kind] = true
	}
	for k := Service; k <= XBackend; k++ {
		if !kinds[k] {
			t.Errorf("no Env method records %v", k)
		}
	}
}

// The informer cache lists objects in a different order every time: the
// Deps must not depend on it, and must change when an object does.
func TestChangedIgnoresOrder(t *testing.T) {
	res := &resources.Resources{}
	for i := range 20 {
		name := string(rune('a' + i))
		res.Services = append(res.Services, &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + name)},
			Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: int32(8000 + i)}}},
		})
		res.Namespaces = append(res.Namespaces, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"team": name}}})
		res.Secrets = append(res.Secrets, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}, Data: map[string][]byte{"tls.crt": []byte(name)}})
		res.HTTPProxies = append(res.HTTPProxies, &contourv1.HTTPProxy{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + name), Generation: 1}})
	}
	want := NewIndex(res, nil)
	rng := rand.New(rand.NewPCG(1, 2))
	for range 10 {
		shuffled := *res
		shuffled.Services, shuffled.Namespaces, shuffled.Secrets = slices.Clone(res.Services), slices.Clone(res.Namespaces), slices.Clone(res.Secrets)
		rng.Shuffle(len(shuffled.Services), func(i, j int) {
			shuffled.Services[i], shuffled.Services[j] = shuffled.Services[j], shuffled.Services[i]
		})
		rng.Shuffle(len(shuffled.Namespaces), func(i, j int) {
			shuffled.Namespaces[i], shuffled.Namespaces[j] = shuffled.Namespaces[j], shuffled.Namespaces[i]
		})
		rng.Shuffle(len(shuffled.Secrets), func(i, j int) {
			shuffled.Secrets[i], shuffled.Secrets[j] = shuffled.Secrets[j], shuffled.Secrets[i]
		})
		if changed := Changed(want, NewIndex(&shuffled, nil)); len(changed) > 0 {
			t.Fatalf("listing the same objects in another order changed deps: %v", changed)
		}
	}
	changed := *res
	changed.Services = slices.Clone(res.Services)
	svc := res.Services[3].DeepCopy()
	svc.Spec.Ports[0].Port++
	changed.Services[3] = svc
	changed.Namespaces = slices.Clone(res.Namespaces)
	ns := res.Namespaces[5].DeepCopy()
	ns.Labels["team"] = "other"
	changed.Namespaces[5] = ns
	changed.Secrets = slices.Clone(res.Secrets)
	sec := res.Secrets[7].DeepCopy()
	sec.Data["tls.crt"] = []byte("renewed")
	changed.Secrets[7] = sec
	changed.HTTPProxies = slices.Clone(res.HTTPProxies)
	proxy := res.HTTPProxies[9].DeepCopy()
	proxy.Generation++
	changed.HTTPProxies[9] = proxy
	same := res.HTTPProxies[10].DeepCopy() // a status write: the same generation
	changed.HTTPProxies[10] = same
	changed.Unserved = []gatewayv1.Kind{"TCPRoute"}
	changed.TLSCertificateDelegations = []*contourv1.TLSCertificateDelegation{{ObjectMeta: metav1.ObjectMeta{Namespace: "certs", Name: "d", UID: "uid-d"}}}
	changed.ExtensionServices = []*contourv1alpha1.ExtensionService{{ObjectMeta: metav1.ObjectMeta{Namespace: "auth", Name: "x", UID: "uid-x", Generation: 1}}}
	changed.Backends = []*gatewayxv1alpha1.XBackend{{ObjectMeta: metav1.ObjectMeta{Namespace: "ext", Name: "b", UID: "uid-b", Generation: 1}}}
	got := Changed(want, NewIndex(&changed, nil))
	wantDeps := map[Dep]bool{
		{Service, key("ns", svc.Name)}:       true,
		{Namespace, key(ns.Name, "")}:        true,
		{Secret, key("ns", sec.Name)}:        true,
		{RouteKinds, key("", "")}:            true,
		{HTTPProxy, key("ns", proxy.Name)}:   true,
		{Delegations, key("certs", "")}:      true,
		{ExtensionService, key("auth", "x")}: true,
		{XBackend, key("ext", "b")}:          true,
	}
	if !maps.Equal(got, wantDeps) {
		t.Fatalf("a changed Service port, namespace label, Secret, HTTPProxy spec, delegation and set of served kinds: changed %v, want %v", got, wantDeps)
	}
}
