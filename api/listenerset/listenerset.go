// Package listenerset is the contract between the operator, which publishes
// the ports of a Gateway's listeners on its fleet's Service, and the
// controller, which programs and reports them: which ListenerSets a Gateway
// takes its extra listeners from, and in which order. Both binaries decide
// it here, so that a port the controller serves is always one the Service
// publishes.
package listenerset

import (
	"cmp"
	"fmt"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// Parent returns the Gateway set's parentRef names, if it names one. The
// parentRef's group and kind default to Gateway's, its namespace to the
// set's.
func Parent(set *gatewayv1.ListenerSet) (types.NamespacedName, bool) {
	ref := set.Spec.ParentRef
	if ref.Group != nil && *ref.Group != gatewayv1.GroupName || ref.Kind != nil && *ref.Kind != "Gateway" {
		return types.NamespacedName{}, false
	}
	ns := set.Namespace
	if ref.Namespace != nil {
		ns = string(*ref.Namespace)
	}
	return types.NamespacedName{Namespace: ns, Name: string(ref.Name)}, true
}

// ParentIs reports whether set's parentRef names gw.
func ParentIs(set *gatewayv1.ListenerSet, gw *gatewayv1.Gateway) bool {
	p, ok := Parent(set)
	return ok && p.Namespace == gw.Namespace && p.Name == gw.Name
}

// Allowed returns why gw's spec.allowedListeners does not let a ListenerSet
// in namespace ns attach, or "". namespaceLabels returns a namespace's
// labels and whether the namespace exists. A Gateway without
// allowedListeners allows none.
func Allowed(gw *gatewayv1.Gateway, ns string, namespaceLabels func(string) (map[string]string, bool)) string {
	from := gatewayv1.NamespacesFromNone
	var selector *metav1.LabelSelector
	if a := gw.Spec.AllowedListeners; a != nil && a.Namespaces != nil {
		if a.Namespaces.From != nil {
			from = *a.Namespaces.From
		}
		selector = a.Namespaces.Selector
	}
	switch from {
	case gatewayv1.NamespacesFromAll:
		return ""
	case gatewayv1.NamespacesFromSame:
		if ns == gw.Namespace {
			return ""
		}
		return fmt.Sprintf("Gateway %s/%s allows ListenerSets from its own namespace only", gw.Namespace, gw.Name)
	case gatewayv1.NamespacesFromSelector:
		if selector == nil {
			return fmt.Sprintf("Gateway %s/%s selects ListenerSet namespaces with no selector", gw.Namespace, gw.Name)
		}
		sel, err := metav1.LabelSelectorAsSelector(selector)
		if err != nil {
			return fmt.Sprintf("Gateway %s/%s has an invalid allowedListeners selector: %v", gw.Namespace, gw.Name, err)
		}
		if l, ok := namespaceLabels(ns); ok && sel.Matches(labels.Set(l)) {
			return ""
		}
		return fmt.Sprintf("Gateway %s/%s does not select namespace %s for ListenerSets", gw.Namespace, gw.Name, ns)
	case gatewayv1.NamespacesFromNone:
		return fmt.Sprintf("Gateway %s/%s allows no ListenerSets (spec.allowedListeners)", gw.Namespace, gw.Name)
	default:
		return fmt.Sprintf("Gateway %s/%s has unknown allowedListeners.namespaces.from %q", gw.Namespace, gw.Name, from)
	}
}

// Candidate is a ListenerSet whose parentRef names a Gateway, and why the
// Gateway does not let it attach ("" when it does).
type Candidate struct {
	Set        *gatewayv1.ListenerSet
	NotAllowed string
}

// Of returns the ListenerSets whose parentRef names gw, in the order their
// listeners follow the Gateway's own (the specification's precedence: the
// oldest first, then by namespace/name), each with whether gw allows it.
func Of(gw *gatewayv1.Gateway, sets []*gatewayv1.ListenerSet, namespaceLabels func(string) (map[string]string, bool)) []Candidate {
	var out []Candidate
	for _, s := range sets {
		if ParentIs(s, gw) {
			out = append(out, Candidate{Set: s, NotAllowed: Allowed(gw, s.Namespace, namespaceLabels)})
		}
	}
	slices.SortFunc(out, func(a, b Candidate) int {
		ta, tb := a.Set.CreationTimestamp, b.Set.CreationTimestamp
		if !ta.Equal(&tb) {
			if ta.Before(&tb) {
				return -1
			}
			return 1
		}
		return cmp.Or(cmp.Compare(a.Set.Namespace, b.Set.Namespace), cmp.Compare(a.Set.Name, b.Set.Name))
	})
	return out
}

// Listeners returns the listeners a Gateway serves: its own, then those of
// the allowed candidates in order. The Service publishes exactly these
// ports.
func Listeners(gw *gatewayv1.Gateway, candidates []Candidate) []gatewayv1.Listener {
	out := slices.Clone(gw.Spec.Listeners)
	for _, c := range candidates {
		if c.NotAllowed != "" {
			continue
		}
		for _, e := range c.Set.Spec.Listeners {
			out = append(out, gatewayv1.Listener(e))
		}
	}
	return out
}
