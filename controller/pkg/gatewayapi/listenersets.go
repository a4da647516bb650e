package gatewayapi

import (
	"fmt"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/types"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"isobar.dev/api/listenerset"
	"isobar.dev/controller/pkg/listener"
	"isobar.dev/controller/pkg/resources"
)

// ListenerSetStatus is the status of a ListenerSet whose parentRef names a
// translated Gateway: the controller serving that Gateway writes it whole.
type ListenerSetStatus struct {
	Gateway types.NamespacedName
	Status  gatewayv1.ListenerSetStatus
}

// validation validates the Gateway's listeners, resolving certificates
// into the IR's Secrets (see translateListeners).
func (t *gatewayTranslator) validation() *listener.Validation { return t.lv }

// listenerSets finds the ListenerSets whose parentRef names the Gateway, in
// precedence order, each with whether the Gateway allows it.
func (t *gatewayTranslator) listenerSets(res *resources.Resources) []*listener.Set {
	var out []*listener.Set
	for _, c := range listenerset.Of(t.gw, res.ListenerSets, t.env.NamespaceLabels) {
		out = append(out, listener.NewListenerSet(c.Set, c.NotAllowed))
	}
	return out
}

// setsKey identifies the ListenerSets of the Gateway and whether each is
// allowed, for the outcome cache: routes attach through them.
func setsKey(sets []*listener.Set) string {
	var b strings.Builder
	for _, s := range sets {
		b.WriteString(string(s.Meta.UID))
		b.WriteByte('/')
		b.WriteString(strconv.FormatInt(s.Meta.Generation, 10))
		if s.NotAllowed != "" {
			b.WriteString("/x")
		}
		b.WriteByte(';')
	}
	return b.String()
}

// parentOf resolves a route's parentRef against the Gateway: the Gateway
// itself (nil), or one of the ListenerSets that name it as their parent.
func (t *gatewayTranslator) parentOf(ref gatewayv1.ParentReference, routeNS string) (*listener.Set, bool) {
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
			if s.IsListenerSet() && s.Meta.Namespace == ns && s.Meta.Name == string(ref.Name) {
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
		if !s.IsListenerSet() {
			continue
		}
		c := listenerSetConditions{Generation: s.Meta.Generation}
		// Programmed follows from Accepted and the Gateway's: package
		// programmed sets it.
		accepted := gatewayv1.ListenerSetConditionAccepted
		st := gatewayv1.ListenerSetStatus{}
		if s.NotAllowed != "" {
			c.Set(accepted, false, gatewayv1.ListenerSetReasonNotAllowed, s.NotAllowed)
		} else {
			usable, invalid, conflicted := classify(s.Listeners)
			for _, l := range s.Listeners {
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
		t.status.ListenerSets[types.NamespacedName{Namespace: s.Meta.Namespace, Name: s.Meta.Name}] = &ListenerSetStatus{
			Gateway: types.NamespacedName{Namespace: t.gw.Namespace, Name: t.gw.Name},
			Status:  st,
		}
	}
	return attached
}

// classify names the listeners that are usable, conflicted, and otherwise
// invalid, for the Accepted messages of their owner.
func classify(ls []*listener.Listener) (usable, invalid, conflicted []string) {
	for _, l := range ls {
		switch {
		case l.Usable():
			usable = append(usable, string(l.Spec.Name))
		case l.Conds.IsTrue(gatewayv1.ListenerConditionConflicted):
			conflicted = append(conflicted, string(l.Spec.Name))
		default:
			invalid = append(invalid, string(l.Spec.Name))
		}
	}
	return usable, invalid, conflicted
}

// listenerStatus is a listener's status entry.
func listenerStatus(l *listener.Listener) gatewayv1.ListenerStatus {
	kinds := l.Kinds
	if kinds == nil {
		kinds = []gatewayv1.RouteGroupKind{}
	}
	return gatewayv1.ListenerStatus{Name: l.Spec.Name, SupportedKinds: kinds, AttachedRoutes: l.Attached, Conditions: l.Conds.Sorted()}
}
