package gatewayapi

import (
	"fmt"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"isobar.dev/api/listenerset"
	"isobar.dev/controller/pkg/resources"
)

// listenerSet is a ListenerSet whose parentRef names the Gateway being
// translated, allowed to attach or not, or a processor's object's TLS
// hosts (peer).
type listenerSet struct {
	// meta is the ListenerSet's, or the processor's object's.
	meta       *metav1.ObjectMeta
	entries    []gatewayv1.ListenerEntry
	peer       *Set
	notAllowed string      // why the Gateway does not allow it, or ""
	listeners  []*listener // in spec order; none when not allowed
}

// isListenerSet says the set is a ListenerSet object's.
func (s *listenerSet) isListenerSet() bool { return s.peer == nil }

// ListenerSetStatus is the status of a ListenerSet whose parentRef names a
// translated Gateway: the controller serving that Gateway writes it whole.
type ListenerSetStatus struct {
	Gateway types.NamespacedName
	Status  gatewayv1.ListenerSetStatus
}

// owner is what owns a listener's references: the Gateway, a ListenerSet
// or a processor's object; grant names what may allow it a certificate in
// another namespace.
type owner struct {
	group, kind string
	namespace   string
	grant       string
}

// ownerOf returns the owner of l (the Gateway for nil or its own listeners).
func (t *gatewayTranslator) ownerOf(l *listener) owner {
	switch {
	case l == nil || l.set == nil:
		return owner{group: gatewayv1.GroupName, kind: "Gateway", namespace: t.gw.Namespace, grant: "ReferenceGrant"}
	case l.set.peer != nil:
		return owner{group: l.set.peer.Group, kind: l.set.peer.Kind, namespace: l.set.meta.Namespace, grant: l.set.peer.Grant}
	}
	return owner{group: gatewayv1.GroupName, kind: "ListenerSet", namespace: l.set.meta.Namespace, grant: "ReferenceGrant"}
}

func (t *gatewayTranslator) generationOf(s *listenerSet) int64 {
	if s == nil {
		return t.gw.Generation
	}
	return s.meta.Generation
}

// listenerSets finds the ListenerSets whose parentRef names the Gateway, in
// precedence order, each with whether the Gateway allows it.
func (t *gatewayTranslator) listenerSets(res *resources.Resources) []*listenerSet {
	var out []*listenerSet
	for _, c := range listenerset.Of(t.gw, res.ListenerSets, t.env.NamespaceLabels) {
		out = append(out, &listenerSet{meta: &c.Set.ObjectMeta, entries: c.Set.Spec.Listeners, notAllowed: c.NotAllowed})
	}
	return out
}

// setsKey identifies the ListenerSets of the Gateway and whether each is
// allowed, for the outcome cache: routes attach through them.
func setsKey(sets []*listenerSet) string {
	var b strings.Builder
	for _, s := range sets {
		b.WriteString(string(s.meta.UID))
		b.WriteByte('/')
		b.WriteString(strconv.FormatInt(s.meta.Generation, 10))
		if s.notAllowed != "" {
			b.WriteString("/x")
		}
		b.WriteByte(';')
	}
	return b.String()
}

// parentOf resolves a route's parentRef against the Gateway: the Gateway
// itself (nil), or one of the ListenerSets that name it as their parent.
func (t *gatewayTranslator) parentOf(ref gatewayv1.ParentReference, routeNS string) (*listenerSet, bool) {
	if ref.Group != nil && *ref.Group != gatewayv1.GroupName {
		return nil, false
	}
	ns := routeNS
	if ref.Namespace != nil {
		ns = string(*ref.Namespace)
	}
	kind := gatewayv1.Kind("Gateway")
	if ref.Kind != nil {
		kind = *ref.Kind
	}
	switch kind {
	case "Gateway":
		return nil, ns == t.gw.Namespace && string(ref.Name) == t.gw.Name
	case "ListenerSet":
		for _, s := range t.sets {
			if s.isListenerSet() && s.meta.Namespace == ns && s.meta.Name == string(ref.Name) {
				return s, true
			}
		}
	}
	return nil, false
}

// writeListenerSetStatus records the status of every ListenerSet naming the
// Gateway, and returns how many are attached (accepted).
func (t *gatewayTranslator) writeListenerSetStatus() int32 {
	var attached int32
	for _, s := range t.sets {
		if !s.isListenerSet() {
			continue
		}
		c := listenerSetConditions{Generation: s.meta.Generation}
		// Programmed follows from Accepted and the Gateway's: package
		// programmed sets it.
		accepted := gatewayv1.ListenerSetConditionAccepted
		st := gatewayv1.ListenerSetStatus{}
		if s.notAllowed != "" {
			c.Set(accepted, false, gatewayv1.ListenerSetReasonNotAllowed, s.notAllowed)
		} else {
			usable, invalid, conflicted := classify(s.listeners)
			for _, l := range s.listeners {
				st.Listeners = append(st.Listeners, gatewayv1.ListenerEntryStatus(listenerStatus(l)))
			}
			switch {
			case len(usable) == 0:
				c.Set(accepted, false, gatewayv1.ListenerSetReasonListenersNotValid, "no listener is valid: "+listenerSummary(usable, invalid, conflicted))
			case len(invalid)+len(conflicted) > 0:
				attached++
				c.Set(accepted, true, gatewayv1.ListenerSetReasonListenersNotValid, listenerSummary(usable, invalid, conflicted))
			default:
				attached++
				c.Set(accepted, true, gatewayv1.ListenerSetReasonAccepted, fmt.Sprintf("attached to Gateway %s/%s", t.gw.Namespace, t.gw.Name))
			}
		}
		st.Conditions = c.Sorted()
		t.status.ListenerSets[types.NamespacedName{Namespace: s.meta.Namespace, Name: s.meta.Name}] = &ListenerSetStatus{
			Gateway: types.NamespacedName{Namespace: t.gw.Namespace, Name: t.gw.Name},
			Status:  st,
		}
	}
	return attached
}

// classify names the listeners that are usable, conflicted, and otherwise
// invalid, for the Accepted messages of their owner.
func classify(ls []*listener) (usable, invalid, conflicted []string) {
	for _, l := range ls {
		switch {
		case l.usable():
			usable = append(usable, string(l.spec.Name))
		case l.conds.IsTrue(gatewayv1.ListenerConditionConflicted):
			conflicted = append(conflicted, string(l.spec.Name))
		default:
			invalid = append(invalid, string(l.spec.Name))
		}
	}
	return usable, invalid, conflicted
}

// listenerStatus is a listener's status entry.
func listenerStatus(l *listener) gatewayv1.ListenerStatus {
	kinds := l.kinds
	if kinds == nil {
		kinds = []gatewayv1.RouteGroupKind{}
	}
	return gatewayv1.ListenerStatus{Name: l.spec.Name, SupportedKinds: kinds, AttachedRoutes: l.attached, Conditions: l.conds.Sorted()}
}
