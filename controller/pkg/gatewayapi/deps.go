package gatewayapi

import (
	"iter"
	"maps"
	"reflect"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	gatewayv1beta1 "sigs.k8s.io/gateway-api/apis/v1beta1"
)

// A dep is something a route's outcome read besides the route: a Service,
// the ReferenceGrants of a namespace or the BackendTLSPolicies of a Service
// (read by its rules), or a namespace's labels (read by attachment, for a
// listener's namespace selector). Outcomes record the deps they read; when
// a snapshot changes a dep, the routes that read it are attached again and
// no other. A Service edited in a namespace no route uses costs nothing but
// noticing it.
type dep struct {
	kind depKind
	// key is the Service, or for grants and labels the namespace alone.
	key types.NamespacedName
}

type depKind uint8

const (
	depService depKind = iota
	depGrants
	depBackendTLS
	depNamespace
)

// readDep records d in deps once.
func readDep(deps *[]dep, d dep) {
	if !slices.Contains(*deps, d) {
		*deps = append(*deps, d)
	}
}

// ruleEval is what evaluating a route's rules (or a stream route's
// backends) found besides the routes: its ResolvedRefs problems, the deps
// it read and the clusters it uses. Every lookup a rule makes goes
// through one, so nothing it reads can be missed.
type ruleEval struct {
	resolved routeConditions
	deps     []dep
	clusters []clusterSpec
}

func newRuleEval(generation int64) *ruleEval {
	return &ruleEval{resolved: routeConditions{generation: generation}}
}

// read records a dep once.
func (e *ruleEval) read(d dep) { readDep(&e.deps, d) }

// cluster records a cluster the rules use.
func (e *ruleEval) cluster(s clusterSpec) { e.clusters = append(e.clusters, s) }

// world is what deps are read from, kept from one translation to compare
// with the next.
type world struct {
	services   map[types.NamespacedName]*corev1.Service
	grants     map[string][]*gatewayv1beta1.ReferenceGrant
	backendTLS map[backendTLSKey]*backendTLS
	namespaces map[string]*corev1.Namespace
}

func (idx *index) world() world {
	return world{services: idx.services, grants: idx.grants, backendTLS: idx.backendTLS, namespaces: idx.namespaces}
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
	for name := range joinKeys(prev.namespaces, cur.namespaces) {
		p, c := prev.namespaces[name], cur.namespaces[name]
		if p != c && (p == nil || c == nil || !maps.Equal(p.Labels, c.Labels)) {
			changed[dep{depNamespace, types.NamespacedName{Namespace: name}}] = true
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

// stale returns the routes of a state whose outcome read a changed dep.
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
	if s.readers == nil {
		return
	}
	for d := range o.allDeps() {
		if s.readers[d] == nil {
			s.readers[d] = map[*metav1.ObjectMeta]bool{}
		}
		s.readers[d][o.meta] = true
	}
}

func (s *gatewayState) removeReader(o *outcome) {
	if s.readers == nil {
		return
	}
	for d := range o.allDeps() {
		if delete(s.readers[d], o.meta); len(s.readers[d]) == 0 {
			delete(s.readers, d)
		}
	}
}

// allDeps are what attaching the route read and what its rules read.
func (o *outcome) allDeps() iter.Seq[dep] {
	return func(yield func(dep) bool) {
		for _, d := range o.deps {
			if !yield(d) {
				return
			}
		}
		if o.rules == nil {
			return
		}
		for _, d := range o.rules.deps {
			if !yield(d) {
				return
			}
		}
	}
}

// anyChanged reports whether one of deps is in changed.
func anyChanged(deps []dep, changed map[dep]bool) bool {
	return slices.ContainsFunc(deps, func(d dep) bool { return changed[d] })
}
