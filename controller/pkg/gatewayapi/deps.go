package gatewayapi

import (
	"reflect"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	gatewayv1beta1 "sigs.k8s.io/gateway-api/apis/v1beta1"
)

// A dep is something a route's rules read besides the route: a Service, the
// ReferenceGrants of a namespace, or the BackendTLSPolicies of a Service.
// Translated rules record the deps they read; when a snapshot changes a dep,
// the routes that read it are translated again and no other. A Service
// edited in a namespace no route uses costs nothing but noticing it.
type dep struct {
	kind depKind
	// key is the Service, or for grants the namespace alone.
	key types.NamespacedName
}

type depKind uint8

const (
	depService depKind = iota
	depGrants
	depBackendTLS
)

// reads collects the deps and clusters of the rules being translated.
type reads struct {
	deps     []dep
	clusters []clusterSpec
}

// read records a dep once.
func (r *reads) read(d dep) {
	if r != nil && !slices.Contains(r.deps, d) {
		r.deps = append(r.deps, d)
	}
}

// cluster records a cluster the rules use.
func (r *reads) cluster(s clusterSpec) {
	if r != nil {
		r.clusters = append(r.clusters, s)
	}
}

// world is what deps are read from, kept from one translation to compare
// with the next.
type world struct {
	services   map[types.NamespacedName]*corev1.Service
	grants     map[string][]*gatewayv1beta1.ReferenceGrant
	backendTLS map[backendTLSKey]*backendTLS
}

func (idx *index) world() world {
	return world{services: idx.services, grants: idx.grants, backendTLS: idx.backendTLS}
}

// changedDeps returns the deps whose objects differ, in what rules read of
// them, between two snapshots. Objects the cache replaced without a change
// that matters (a Service's status, a resync) are compared by content.
func changedDeps(prev, cur world) map[dep]bool {
	changed := map[dep]bool{}
	for k, s := range cur.services {
		if p := prev.services[k]; p != s && (p == nil || !sameService(p, s)) {
			changed[dep{depService, k}] = true
		}
	}
	for k := range prev.services {
		if _, ok := cur.services[k]; !ok {
			changed[dep{depService, k}] = true
		}
	}
	for ns := range joinKeys(prev.grants, cur.grants) {
		if !sameGrants(prev.grants[ns], cur.grants[ns]) {
			changed[dep{depGrants, types.NamespacedName{Namespace: ns}}] = true
		}
	}
	for k := range joinKeys(prev.backendTLS, cur.backendTLS) {
		if !sameBackendTLS(prev.backendTLS[k], cur.backendTLS[k]) {
			changed[dep{depBackendTLS, k.service}] = true
		}
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

// sameBackendTLS compares two evaluations of the policy for a Service port:
// rules keep the evaluation they read, and its status is reported from it.
func sameBackendTLS(a, b *backendTLS) bool {
	if a == nil || b == nil {
		return a == b
	}
	if !samePolicy(a, b) || len(a.losers) != len(b.losers) {
		return false
	}
	for i := range a.losers {
		if !samePolicy(a.losers[i], b.losers[i]) {
			return false
		}
	}
	return true
}

func samePolicy(a, b *backendTLS) bool {
	return a.policy.UID == b.policy.UID && a.policy.Namespace == b.policy.Namespace && a.policy.Name == b.policy.Name &&
		a.policy.Generation == b.policy.Generation && reflect.DeepEqual(a.tls, b.tls) && reflect.DeepEqual(a.conds, b.conds)
}

// stale returns the routes of a state whose rules read a changed dep.
func (s *gatewayState) stale(changed map[dep]bool) map[*metav1.ObjectMeta]bool {
	if len(changed) == 0 {
		return nil
	}
	if s.readers == nil {
		s.readers = map[dep]map[*metav1.ObjectMeta]bool{}
		for _, o := range s.applied {
			s.addReader(o)
		}
	}
	var out map[*metav1.ObjectMeta]bool
	for d := range changed {
		for m := range s.readers[d] {
			if out == nil {
				out = map[*metav1.ObjectMeta]bool{}
			}
			out[m] = true
		}
	}
	return out
}

// addReader indexes an outcome's deps, once the state keeps an index.
func (s *gatewayState) addReader(o *outcome) {
	if s.readers == nil || o.rules == nil {
		return
	}
	for _, d := range o.rules.deps {
		if s.readers[d] == nil {
			s.readers[d] = map[*metav1.ObjectMeta]bool{}
		}
		s.readers[d][o.meta] = true
	}
}

func (s *gatewayState) removeReader(o *outcome) {
	if s.readers == nil || o.rules == nil {
		return
	}
	for _, d := range o.rules.deps {
		if delete(s.readers[d], o.meta); len(s.readers[d]) == 0 {
			delete(s.readers, d)
		}
	}
}

// anyChanged reports whether one of deps is in changed.
func anyChanged(deps []dep, changed map[dep]bool) bool {
	return slices.ContainsFunc(deps, func(d dep) bool { return changed[d] })
}
