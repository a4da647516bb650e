package env

import (
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
	gatewayv1beta1 "sigs.k8s.io/gateway-api/apis/v1beta1"
)

// Changed returns the Deps whose objects differ, in what rules read of
// them, between two snapshots' indexes. It compares every Kind an Env can
// record. Objects the cache replaced without a change that matters (a
// Service's status, a resync) are compared by content, and the order the
// cache listed them in does not count.
func Changed(prev, cur *Index) map[Dep]bool {
	changed := map[Dep]bool{}
	mark := func(kind Kind, k types.NamespacedName) { changed[Dep{Kind: kind, Key: k}] = true }
	for k := range joinKeys(prev.services, cur.services) {
		if p, c := prev.services[k], cur.services[k]; p != c && (p == nil || c == nil || !sameService(p, c)) {
			mark(Service, k)
		}
	}
	for ns := range joinKeys(prev.grants, cur.grants) {
		if !sameGrants(prev.grants[ns], cur.grants[ns]) {
			mark(Grants, key(ns, ""))
		}
	}
	for k := range joinKeys(prev.backendTLS, cur.backendTLS) {
		if p, c := prev.backendTLS[k], cur.backendTLS[k]; p == nil || c == nil || !p.Same(c) {
			mark(BackendTLS, k.Service)
		}
	}
	for name := range joinKeys(prev.namespaces, cur.namespaces) {
		p, c := prev.namespaces[name], cur.namespaces[name]
		if p != c && (p == nil || c == nil || !maps.Equal(p.Labels, c.Labels)) {
			mark(Namespace, key(name, ""))
		}
	}
	for k := range joinKeys(prev.secrets, cur.secrets) {
		p, c := prev.secrets[k], cur.secrets[k]
		if p != c && (p == nil || c == nil || p.UID != c.UID || p.Type != c.Type || !apiequality.Semantic.DeepEqual(p.Data, c.Data)) {
			mark(Secret, k)
		}
	}
	for k := range joinKeys(prev.configMaps, cur.configMaps) {
		p, c := prev.configMaps[k], cur.configMaps[k]
		if p != c && (p == nil || c == nil || p.UID != c.UID || !maps.Equal(p.Data, c.Data) || !apiequality.Semantic.DeepEqual(p.BinaryData, c.BinaryData)) {
			mark(ConfigMap, k)
		}
	}
	if prev.unservedKinds != cur.unservedKinds {
		mark(RouteKinds, types.NamespacedName{})
	}
	return changed
}

func joinKeys[K comparable, V any](a, b map[K]V) map[K]bool {
	out := make(map[K]bool, len(a))
	for k := range a {
		out[k] = true
	}
	for k := range b {
		out[k] = true
	}
	return out
}

// sameService reports whether rules resolve alike against two versions of
// a Service: the same object (UID) with the same ports.
func sameService(a, b *corev1.Service) bool {
	if a.UID != b.UID || len(a.Spec.Ports) != len(b.Spec.Ports) {
		return false
	}
	for i, p := range a.Spec.Ports {
		q := b.Spec.Ports[i]
		if p.Name != q.Name || p.Port != q.Port || p.Protocol != q.Protocol || deref(p.AppProtocol) != deref(q.AppProtocol) {
			return false
		}
	}
	return true
}

// sameGrants compares two listings of a namespace's ReferenceGrants, in
// whatever order the cache listed them.
func sameGrants(a, b []*gatewayv1beta1.ReferenceGrant) bool {
	if len(a) != len(b) {
		return false
	}
	byName := func(x, y *gatewayv1beta1.ReferenceGrant) int { return strings.Compare(x.Name, y.Name) }
	a, b = slices.SortedFunc(slices.Values(a), byName), slices.SortedFunc(slices.Values(b), byName)
	for i := range a {
		if a[i] != b[i] && (a[i].UID != b[i].UID || !apiequality.Semantic.DeepEqual(a[i].Spec, b[i].Spec)) {
			return false
		}
	}
	return true
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}
