package gatewayapi

import (
	"fmt"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"isobar.dev/controller/pkg/condition"
	"isobar.dev/controller/pkg/hostname"
	"isobar.dev/controller/pkg/listener"
	"isobar.dev/controller/pkg/validate"
)

// route is what attachment needs to know of any route kind.
type route struct {
	kind       gatewayv1.Kind
	meta       *metav1.ObjectMeta
	parentRefs []gatewayv1.ParentReference
	hostnames  []gatewayv1.Hostname
	// defaulted routes attach to the default Gateways too (refsOf).
	defaulted bool
}

// attachment is a route attached through one parentRef to listeners of this
// Gateway.
type attachment struct {
	ref   gatewayv1.ParentReference
	conds routeConditions
	// hosts are, per accepted listener, the hostnames the route serves on it.
	listeners []*listener.Listener
	hosts     [][]string
	// attached are the listeners the route attaches to, usable or not:
	// their attachedRoutes count it once its Accepted condition is final
	// and true (see countAccepted).
	attached []*listener.Listener
}

// countAccepted counts an attachment in its route's outcome on its
// listeners' attachedRoutes if the route is accepted there:
// attachedRoutes counts exactly those.
func (t *gatewayTranslator) countAccepted(o *outcome, a *attachment) {
	if !a.conds.IsTrue(gatewayv1.RouteConditionAccepted) {
		return
	}
	for _, l := range a.attached {
		o.Counted = append(o.Counted, slices.Index(t.listeners, l))
	}
}

// attach resolves a route's parentRefs that point at this Gateway. It
// returns one attachment per such parentRef, accepted or not, and records
// what it read in o.
func (t *gatewayTranslator) attach(o *outcome, r route) []*attachment {
	var invalid error
	for _, h := range r.hostnames {
		if err := validate.Hostname(string(h), true); err != nil {
			invalid = err
			break
		}
	}
	var out []*attachment
	for _, ref := range t.refsOf(r) {
		set, ok := t.parentOf(ref, r.meta.Namespace)
		if !ok {
			continue
		}
		a := &attachment{ref: ref, conds: routeConditions{Generation: r.meta.Generation}}
		out = append(out, a)
		if invalid != nil {
			a.conds.Set(gatewayv1.RouteConditionAccepted, false, gatewayv1.RouteReasonUnsupportedValue, invalid.Error())
			continue
		}
		if set != nil && set.NotAllowed != "" {
			a.conds.Set(gatewayv1.RouteConditionAccepted, false, gatewayv1.RouteReasonNotAllowedByListeners,
				fmt.Sprintf("ListenerSet %s/%s is not attached to its Gateway: %s", set.Meta.Namespace, set.Meta.Name, set.NotAllowed))
			continue
		}
		t.attachParent(o, r, set, a)
	}
	return out
}

// attachParent finds the listeners a parentRef selects among those of its
// parent (the Gateway's own, or set's) and applies each listener's
// allowedRoutes and hostname, in the order the Gateway API reports
// failures: no listener selected, not allowed, no hostname in common.
func (t *gatewayTranslator) attachParent(o *outcome, r route, set *listener.Set, a *attachment) {
	accepted := gatewayv1.RouteConditionAccepted
	// Gateways have few listeners: these lists live on the stack.
	var selectedBuf, allowedBuf [8]*listener.Listener
	selected, allowed := selectedBuf[:0], allowedBuf[:0]
	for _, l := range t.listeners {
		if selectedBy(l, a.ref, set) {
			selected = append(selected, l)
		}
	}
	if len(selected) == 0 {
		a.conds.Set(accepted, false, gatewayv1.RouteReasonNoMatchingParent, noListenerMessage(a.ref, set))
		return
	}
	var why []string
	for _, l := range selected {
		if msg := t.allows(o, l, r); msg != "" {
			why = append(why, msg)
			continue
		}
		allowed = append(allowed, l)
	}
	if len(allowed) == 0 {
		a.conds.Set(accepted, false, gatewayv1.RouteReasonNotAllowedByListeners, condition.JoinMessages(why))
		return
	}
	// A route attaches to a listener that allows it and shares a hostname
	// with it, whatever the listener's own validity (a missing certificate,
	// a conflict): attachedRoutes counts it there, as the Gateway API asks.
	// Only usable listeners are programmed with it. A route that loses its
	// hostnames to a route of the other kind is not accepted there.
	var conflicts []string
	a.listeners, a.hosts = make([]*listener.Listener, 0, len(allowed)), make([][]string, 0, len(allowed))
	for _, l := range allowed {
		hosts := t.routeHosts(l, r.hostnames)
		if len(hosts) == 0 {
			continue
		}
		if msg, lost := t.lost[r.meta][slices.Index(t.listeners, l)]; lost {
			conflicts = append(conflicts, msg)
			continue
		}
		a.attached = append(a.attached, l)
		if l.Usable() {
			a.listeners = append(a.listeners, l)
			a.hosts = append(a.hosts, hosts)
		}
	}
	if len(a.attached) == 0 {
		if len(conflicts) > 0 {
			a.conds.Set(accepted, false, "HostnameConflict", condition.JoinMessages(conflicts))
			return
		}
		a.conds.Set(accepted, false, gatewayv1.RouteReasonNoMatchingListenerHostname,
			fmt.Sprintf("none of the route's hostnames %v matches a listener hostname", r.hostnames))
		return
	}
	a.conds.Set(accepted, true, gatewayv1.RouteReasonAccepted, "Route is accepted")
}

// selectedBy reports whether a parentRef to set (nil for the Gateway)
// selects the listener: a parentRef to the Gateway selects only its own
// listeners, one to a ListenerSet only the set's, then by sectionName and
// port when given.
func selectedBy(l *listener.Listener, ref gatewayv1.ParentReference, set *listener.Set) bool {
	return l.Set == set && (ref.SectionName == nil || *ref.SectionName == l.Spec.Name) && (ref.Port == nil || *ref.Port == l.Spec.Port)
}

func noListenerMessage(ref gatewayv1.ParentReference, set *listener.Set) string {
	parent := "the Gateway"
	if set != nil {
		parent = "the ListenerSet"
	}
	switch {
	case ref.SectionName != nil && ref.Port != nil:
		return fmt.Sprintf("%s has no listener named %q on port %d", parent, *ref.SectionName, *ref.Port)
	case ref.SectionName != nil:
		return fmt.Sprintf("%s has no listener named %q", parent, *ref.SectionName)
	case ref.Port != nil:
		return fmt.Sprintf("%s has no listener on port %d", parent, *ref.Port)
	default:
		return parent + " has no listeners"
	}
}

// allows returns why listener l does not allow route r, or "". A
// namespace selector reads the route's namespace's labels: a dep of o.
func (t *gatewayTranslator) allows(o *outcome, l *listener.Listener, r route) string {
	kindOK := false
	for _, k := range l.Kinds {
		if k.Kind == r.kind {
			kindOK = true
		}
	}
	if !kindOK {
		return fmt.Sprintf("listener %q does not allow %s", l.Spec.Name, r.kind)
	}
	from := gatewayv1.NamespacesFromSame
	var selector *metav1.LabelSelector
	if l.Spec.AllowedRoutes != nil && l.Spec.AllowedRoutes.Namespaces != nil {
		if l.Spec.AllowedRoutes.Namespaces.From != nil {
			from = *l.Spec.AllowedRoutes.Namespaces.From
		}
		selector = l.Spec.AllowedRoutes.Namespaces.Selector
	}
	switch from {
	case gatewayv1.NamespacesFromAll:
		return ""
	case gatewayv1.NamespacesFromSame:
		// The namespace of the listener's owner: a ListenerSet's, for
		// its listeners.
		ns := t.validation().OwnerOf(l).Namespace
		if r.meta.Namespace == ns {
			return ""
		}
		return fmt.Sprintf("listener %q allows routes from namespace %s only", l.Spec.Name, ns)
	case gatewayv1.NamespacesFromSelector:
		if selector == nil {
			return fmt.Sprintf("listener %q selects namespaces with no selector", l.Spec.Name)
		}
		sel, err := metav1.LabelSelectorAsSelector(selector)
		if err != nil {
			return fmt.Sprintf("listener %q has an invalid namespace selector: %v", l.Spec.Name, err)
		}
		nsLabels, ok := t.envFor(o).NamespaceLabels(r.meta.Namespace)
		if ok && sel.Matches(labels.Set(nsLabels)) {
			return ""
		}
		return fmt.Sprintf("listener %q does not select namespace %s", l.Spec.Name, r.meta.Namespace)
	default:
		return fmt.Sprintf("listener %q has unknown allowedRoutes.namespaces.from %q", l.Spec.Name, from)
	}
}

// routeHosts is the set of hostnames a route serves on listener l: the
// intersections of its hostnames with the listener's, less those that a more
// specific listener on the same port claims (listener isolation: a request
// for the more specific listener's hostname never reaches this one's routes).
func (t *gatewayTranslator) routeHosts(l *listener.Listener, hostnames []gatewayv1.Hostname) []string {
	var out []string
	// A route without hostnames has the listener's.
	for i := range max(len(hostnames), 1) {
		h := ""
		if len(hostnames) > 0 {
			h = string(hostnames[i])
		}
		host, ok := hostname.Intersect(h, l.Hostname)
		if !ok {
			continue
		}
		if t.claimedElsewhere(l, host) {
			continue
		}
		if host == "" {
			host = "*"
		}
		if !contains(out, host) {
			out = append(out, host)
		}
	}
	return out
}

// claimedElsewhere reports whether every request for host (exact or
// wildcard) belongs to a more specific listener on l's port. A wildcard
// that is only partly claimed stays: Envoy picks the more specific virtual
// host for the claimed part itself.
func (t *gatewayTranslator) claimedElsewhere(l *listener.Listener, host string) bool {
	if host == "" {
		return false
	}
	for _, o := range t.listeners {
		if o == l || o.Spec.Port != l.Spec.Port || o.Family != l.Family {
			continue
		}
		if hostname.Matches(o.Hostname, host) && hostname.MoreSpecific(o.Hostname, l.Hostname) {
			return true
		}
	}
	return false
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
