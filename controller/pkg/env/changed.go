package env

import (
	"maps"
	"slices"
	"strings"

	contourv1 "github.com/projectcontour/contour/apis/projectcontour/v1"
	contourv1alpha1 "github.com/projectcontour/contour/apis/projectcontour/v1alpha1"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
	gatewayv1beta1 "sigs.k8s.io/gateway-api/apis/v1beta1"
	gatewayxv1alpha1 "sigs.k8s.io/gateway-api/apisx/v1alpha1"
)

// Changed returns the Deps whose objects differ, in what rules read of
// them, between two snapshots' indexes. It compares every Kind an Env can
// record. Objects the cache replaced without a change that matters (a
// Service's status, a resync) are compared by content, and the order the
// cache listed them in does not count.
func Changed(prev, cur *Index) map[Dep]bool {
	changed := map[Dep]bool{}
	mark := func(kind Kind) func(types.NamespacedName) {
		return func(k types.NamespacedName) { changed[Dep{Kind: kind, Key: k}] = true }
	}
	byNamespace := func(kind Kind) func(string) {
		return func(ns string) { changed[Dep{Kind: kind, Key: key(ns, "")}] = true }
	}
	diff(prev.services, cur.services, sameService, mark(Service))
	diff(prev.grants, cur.grants, sameGrants, byNamespace(Grants))
	diff(prev.backendTLS, cur.backendTLS, Evaluated.Same, func(k PolicyKey) { mark(BackendTLS)(k.Service) })
	diff(prev.traffic, cur.traffic, Evaluated.Same, mark(Service))
	diff(prev.namespaces, cur.namespaces, func(a, b *corev1.Namespace) bool { return a == b || maps.Equal(a.Labels, b.Labels) }, byNamespace(Namespace))
	diff(prev.secrets, cur.secrets, func(a, b *corev1.Secret) bool {
		return a == b || a.UID == b.UID && a.Type == b.Type && apiequality.Semantic.DeepEqual(a.Data, b.Data)
	}, mark(Secret))
	diff(prev.configMaps, cur.configMaps, func(a, b *corev1.ConfigMap) bool {
		return a == b || a.UID == b.UID && maps.Equal(a.Data, b.Data) && apiequality.Semantic.DeepEqual(a.BinaryData, b.BinaryData)
	}, mark(ConfigMap))
	diff(prev.proxies, cur.proxies, func(a, b *contourv1.HTTPProxy) bool {
		// A proxy's spec is all a rule reads of it; the generation moves
		// with the spec.
		return a == b || a.UID == b.UID && a.Generation == b.Generation && a.Generation != 0
	}, mark(HTTPProxy))
	diff(prev.delegations, cur.delegations, sameDelegations, byNamespace(Delegations))
	diff(prev.extensions, cur.extensions, func(a, b *contourv1alpha1.ExtensionService) bool {
		return a == b || a.UID == b.UID && a.Generation == b.Generation && a.Generation != 0
	}, mark(ExtensionService))
	diff(prev.backends, cur.backends, func(a, b *gatewayxv1alpha1.XBackend) bool {
		return a == b || a.UID == b.UID && a.Generation == b.Generation && a.Generation != 0
	}, mark(XBackend))
	if prev.unservedKinds != cur.unservedKinds {
		mark(RouteKinds)(types.NamespacedName{})
	}
	return changed
}

// diff calls changed with every key whose value was added, removed, or
// replaced by one that same says reads differently (same sees the
// informer's unchanged objects first: the same pointer). It allocates nothing:
// it runs on every translation, over every Service of the snapshot.
func diff[K comparable, V any](prev, cur map[K]V, same func(a, b V) bool, changed func(K)) {
	for k, c := range cur {
		if p, ok := prev[k]; !ok || !same(p, c) {
			changed(k)
		}
	}
	for k := range prev {
		if _, ok := cur[k]; !ok {
			changed(k)
		}
	}
}

// sameService reports whether rules resolve alike against two versions of
// a Service: the same object (UID) with the same ports, type, external
// name and annotations (Contour's, such as projectcontour.io/
// upstream-protocol.h2c, say how an HTTPProxy speaks to it).
func sameService(a, b *corev1.Service) bool {
	if a == b {
		return true
	}
	if a.UID != b.UID || len(a.Spec.Ports) != len(b.Spec.Ports) || a.Spec.Type != b.Spec.Type ||
		a.Spec.ExternalName != b.Spec.ExternalName || !maps.Equal(a.Annotations, b.Annotations) {
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

// sameGrants and sameDelegations report whether two namespaces' grants
// (or delegations) allow alike: the same objects (UID) with the same spec,
// in any order.
var (
	sameGrants      = sameObjects(func(g *gatewayv1beta1.ReferenceGrant) any { return &g.Spec })
	sameDelegations = sameObjects(func(d *contourv1.TLSCertificateDelegation) any { return &d.Spec })
)

func sameObjects[T interface {
	GetName() string
	GetUID() types.UID
}](spec func(T) any) func(a, b []T) bool {
	return func(a, b []T) bool {
		if len(a) != len(b) {
			return false
		}
		byName := func(x, y T) int { return strings.Compare(x.GetName(), y.GetName()) }
		a, b = slices.SortedFunc(slices.Values(a), byName), slices.SortedFunc(slices.Values(b), byName)
		for i := range a {
			if any(a[i]) != any(b[i]) && (a[i].GetUID() != b[i].GetUID() || !apiequality.Semantic.DeepEqual(spec(a[i]), spec(b[i]))) {
				return false
			}
		}
		return true
	}
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}
