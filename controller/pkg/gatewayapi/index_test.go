package gatewayapi

import (
	"maps"
	"math/rand/v2"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8stypes "k8s.io/apimachinery/pkg/types"

	"isobar.dev/controller/pkg/resources"
)

// The informer cache lists objects in a different order every time: the
// deps that keep a Gateway's state must not depend on it, and must change
// when an object does.
func TestDepsIgnoreOrder(t *testing.T) {
	res := &resources.Resources{}
	for i := range 20 {
		name := string(rune('a' + i))
		res.Services = append(res.Services, &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: k8stypes.UID("uid-" + name)},
			Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: int32(8000 + i)}}},
		})
		res.Namespaces = append(res.Namespaces, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"team": name}}})
	}
	want := newIndex(res)
	rng := rand.New(rand.NewPCG(1, 2))
	for range 10 {
		shuffled := *res
		shuffled.Services, shuffled.Namespaces = slices.Clone(res.Services), slices.Clone(res.Namespaces)
		rng.Shuffle(len(shuffled.Services), func(i, j int) {
			shuffled.Services[i], shuffled.Services[j] = shuffled.Services[j], shuffled.Services[i]
		})
		rng.Shuffle(len(shuffled.Namespaces), func(i, j int) {
			shuffled.Namespaces[i], shuffled.Namespaces[j] = shuffled.Namespaces[j], shuffled.Namespaces[i]
		})
		got := newIndex(&shuffled)
		if changed := changedDeps(want.world(), got.world()); len(changed) > 0 {
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
	got := newIndex(&changed)
	d := changedDeps(want.world(), got.world())
	wantDeps := map[dep]bool{
		{depService, k8stypes.NamespacedName{Namespace: "ns", Name: svc.Name}}: true,
		{depNamespace, k8stypes.NamespacedName{Namespace: ns.Name}}:            true,
	}
	if !maps.Equal(d, wantDeps) {
		t.Fatalf("a changed Service port and namespace label: changed deps %v, want %v", d, wantDeps)
	}
}
