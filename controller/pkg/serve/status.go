package serve

import (
	"context"
	"fmt"

	"golang.org/x/sync/errgroup"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	gatewayxv1alpha1 "sigs.k8s.io/gateway-api/apisx/v1alpha1"

	specaddr "isobar.dev/api/addresses"
	"isobar.dev/api/target"
	"isobar.dev/controller/pkg/fleetreport"
	"isobar.dev/controller/pkg/gatewayapi"
	"isobar.dev/controller/pkg/programmed"
	"isobar.dev/controller/pkg/translate"
)

// statusCache remembers which routes and policies carry entries of ours,
// and which: the translation's own slices, which it hands out again while
// a route's entries stay the same. An entry is removed when its object
// stops referring to the Gateway; an object whose entries are the slice
// last written is not read again unless someone touched it.
type statusCache struct {
	routes          map[translate.RouteKey][]gatewayv1.RouteParentStatus
	policies        map[types.NamespacedName][]gatewayv1.PolicyAncestorStatus
	trafficPolicies map[types.NamespacedName][]gatewayv1.PolicyAncestorStatus
	backends        map[types.NamespacedName][]gatewayv1.PolicyAncestorStatus
}

// statusWork is one translation's status and what it served.
type statusWork struct {
	target target.Target
	status *translate.Status
}

// writeGatewayStatus writes the served Gateway's status with the fleet's
// Programmed verdict, its ListenerSets' and its Ingresses': all that a
// change of the fleet's acknowledgements or of the Envoy Service's
// addresses can change. Each is written only when it changed.
func (w *statusWriter) writeGatewayStatus(ctx context.Context, work *statusWork, fleet fleetreport.Fleet, addresses []gatewayv1.GatewayStatusAddress) error {
	w.gateway = work.target.Gateway
	st := work.status
	if st == nil {
		return nil
	}
	if gs, ok := st.Gateways[w.gateway]; ok {
		var requested []specaddr.Requested
		if w.opts.EnvoyService != "" {
			obj := &gatewayv1.Gateway{}
			if err := w.client.Get(ctx, w.gateway, obj); err != nil {
				return client.IgnoreNotFound(err)
			}
			requested, _ = specaddr.Of(obj)
		}
		gw := programmed.Gateway(*gs, programmed.DataPlane{Fleet: fleet, Addresses: addresses, NeedAddress: w.opts.EnvoyService != "", Requested: requested})
		if err := w.writeGateway(ctx, w.gateway, gw, addresses, true); err != nil {
			return err
		}
		parent := meta.FindStatusCondition(gw.Conditions, string(gatewayv1.GatewayConditionProgrammed))
		for k, ls := range st.ListenerSets {
			if ls.Gateway != w.gateway {
				continue
			}
			if w.sets == nil {
				w.sets = map[types.NamespacedName]bool{}
			}
			w.sets[k] = true
			if err := w.writeListenerSet(ctx, k, programmed.ListenerSet(ls.Status, parent)); err != nil {
				return err
			}
		}
		if err := w.writeIngresses(ctx, st.Ingresses, addresses); err != nil {
			return err
		}
		if err := w.writeHTTPProxies(ctx, st.HTTPProxies, addresses); err != nil {
			return err
		}
		for k, es := range st.ExtensionServices {
			if err := w.writeExtensionService(ctx, k, es); err != nil {
				return err
			}
		}
	}
	return nil
}

// writeObjects writes the rest of a translation's status: the class's in
// controllerName mode, why passed-over classes and Gateways are not
// served, and this Gateway's entries in its routes' and BackendTLSPolicies'
// status; each only when it changed or recheck asks for it, retrying on
// conflicts: many controllers write the same routes.
func (w *statusWriter) writeObjects(ctx context.Context, work *statusWork, recheck func(objectKey) bool) error {
	st := work.status
	if st == nil {
		st = &translate.Status{Status: &gatewayapi.Status{}}
	}
	if cs, ok := st.GatewayClasses[work.target.Class]; ok {
		if err := w.writeClass(ctx, work.target.Class, cs.Conditions, cs.SupportedFeatures); err != nil {
			return err
		}
	}
	for name, msg := range work.target.PassedOverClasses {
		c := condition(gatewayv1.GatewayClassConditionStatusAccepted, false, gatewayv1.GatewayClassReasonUnsupported, msg)
		if err := w.writeClass(ctx, name, []metav1.Condition{c}, nil); err != nil {
			return err
		}
	}
	for g, msg := range work.target.PassedOverGateways {
		conds := gatewayv1.GatewayStatus{Conditions: []metav1.Condition{
			condition(gatewayv1.GatewayConditionAccepted, false, gatewayv1.GatewayReasonPending, msg),
			condition(gatewayv1.GatewayConditionProgrammed, false, gatewayv1.GatewayReasonPending, msg),
		}}
		if err := w.writeGateway(ctx, g, conds, nil, false); err != nil {
			return err
		}
	}
	var err error
	recheckRoute := func(k translate.RouteKey) bool { return recheck(routeKey(k)) }
	if w.written.routes, err = writeEach(st.Routes, w.written.routes, recheckRoute, func(k translate.RouteKey, parents []gatewayv1.RouteParentStatus) error {
		return w.writeRoute(ctx, k, parents)
	}); err != nil {
		return err
	}
	recheckPolicy := func(k types.NamespacedName) bool { return recheck(policyKey(k)) }
	if w.written.policies, err = writeEach(st.BackendTLSPolicies, w.written.policies, recheckPolicy, func(k types.NamespacedName, ancestors []gatewayv1.PolicyAncestorStatus) error {
		return w.writePolicy(ctx, k, ancestors)
	}); err != nil {
		return err
	}
	recheckTraffic := func(k types.NamespacedName) bool { return recheck(objectKey{"XBackendTrafficPolicy", k}) }
	if w.written.trafficPolicies, err = writeEach(st.BackendTrafficPolicies, w.written.trafficPolicies, recheckTraffic, func(k types.NamespacedName, ancestors []gatewayv1.PolicyAncestorStatus) error {
		return w.writeTrafficPolicy(ctx, k, ancestors)
	}); err != nil {
		return err
	}
	recheckBackend := func(k types.NamespacedName) bool { return recheck(objectKey{"XBackend", k}) }
	w.written.backends, err = writeEach(st.Backends, w.written.backends, recheckBackend, func(k types.NamespacedName, ancestors []gatewayv1.PolicyAncestorStatus) error {
		return w.writeBackend(ctx, k, ancestors)
	})
	return err
}

// statusWriters is how many objects a pass writes at once: each write is
// a round trip to the API server, and a thousand routes written one by
// one take as many round trips end to end.
const statusWriters = 8

// writeEach writes each object's desired entries, and writes none (removing
// ours) to the objects written before that no longer have any, several at
// a time. An object whose desired entries equal those written before is
// skipped unless recheck says otherwise: the same slice, or an equal one
// (a status write replaces the route's object, so the translator
// evaluates it again, to equal entries; a few microseconds to compare
// against a read of the object). It returns what now
// carries entries of ours; on an error, what did before, so that the next
// pass retries.
func writeEach[K comparable, E any](desired, before map[K][]E, recheck func(K) bool, write func(K, []E) error) (map[K][]E, error) {
	// desired is the translation's, which nothing changes once made: it
	// becomes what was written without a copy, which at thousands of
	// routes would cost every pass more than the writes.
	var todo []K
	kept := 0
	for k, v := range desired {
		old, ok := before[k]
		if ok {
			kept++
		}
		if !ok || !sameSlice(old, v) && !apiequality.Semantic.DeepEqual(old, v) || recheck(k) {
			todo = append(todo, k)
		}
	}
	// Every object written before is still desired unless fewer were
	// found than there were: at thousands of routes, looking each up
	// again costs a pass as much as the loop above.
	if kept < len(before) {
		for k := range before {
			if _, ok := desired[k]; !ok {
				todo = append(todo, k)
			}
		}
	}
	var g errgroup.Group
	g.SetLimit(statusWriters)
	for _, k := range todo {
		g.Go(func() error { return write(k, desired[k]) })
	}
	if err := g.Wait(); err != nil {
		return before, err
	}
	return desired, nil
}

// sameSlice reports whether a and b are the same slice, not merely equal.
func sameSlice[E any](a, b []E) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

// condition is a condition without observedGeneration or transition time;
// the writers fill those in.
func condition[T, R ~string](typ T, status bool, reason R, msg string) metav1.Condition {
	c := metav1.Condition{Type: string(typ), Status: metav1.ConditionFalse, Reason: string(reason), Message: msg}
	if status {
		c.Status = metav1.ConditionTrue
	}
	return c
}

// writeGateway merges desired's conditions into a Gateway's; a served
// Gateway's listeners and addresses are replaced too.
func (w *statusWriter) writeGateway(ctx context.Context, name types.NamespacedName, desired gatewayv1.GatewayStatus, addresses []gatewayv1.GatewayStatusAddress, served bool) error {
	return w.retry(func(reader client.Reader) error {
		gw := &gatewayv1.Gateway{}
		if err := reader.Get(ctx, name, gw); err != nil {
			return client.IgnoreNotFound(err)
		}
		next := gw.Status.DeepCopy()
		for _, c := range desired.Conditions {
			if !served {
				c.ObservedGeneration = gw.Generation
			}
			meta.SetStatusCondition(&next.Conditions, c)
		}
		if served {
			// Conditions the translation sets only while their cause
			// lasts go with it.
			for _, typ := range []gatewayv1.GatewayConditionType{gatewayv1.GatewayConditionResolvedRefs, gatewayv1.GatewayConditionInsecureFrontendValidationMode, gatewayapi.ConditionDefaultGateway} {
				if meta.FindStatusCondition(desired.Conditions, string(typ)) == nil {
					meta.RemoveStatusCondition(&next.Conditions, string(typ))
				}
			}
		}
		if !served {
			if apiequality.Semantic.DeepEqual(next, &gw.Status) {
				return nil
			}
			gw.Status = *next
			return w.update(ctx, gw, "Gateway")
		}
		listeners := make([]gatewayv1.ListenerStatus, len(desired.Listeners))
		for i, l := range desired.Listeners {
			listeners[i] = l
			var old []metav1.Condition
			for _, o := range gw.Status.Listeners {
				if o.Name == l.Name {
					old = o.Conditions
				}
			}
			listeners[i].Conditions = mergeConditions(old, l.Conditions)
		}
		next.Listeners = listeners
		next.Addresses = addresses
		next.AttachedListenerSets = desired.AttachedListenerSets
		if apiequality.Semantic.DeepEqual(next, &gw.Status) {
			return nil
		}
		gw.Status = *next
		return w.update(ctx, gw, "Gateway")
	})
}

// writeListenerSet replaces a ListenerSet's status: the controller serving
// its parent Gateway owns all of it. Transition times stay where a
// condition did not change.
func (w *statusWriter) writeListenerSet(ctx context.Context, name types.NamespacedName, desired gatewayv1.ListenerSetStatus) error {
	return w.retry(func(reader client.Reader) error {
		ls := &gatewayv1.ListenerSet{}
		if err := reader.Get(ctx, name, ls); err != nil {
			return client.IgnoreNotFound(err)
		}
		next := gatewayv1.ListenerSetStatus{Conditions: mergeConditions(ls.Status.Conditions, desired.Conditions)}
		for _, l := range desired.Listeners {
			var old []metav1.Condition
			for _, o := range ls.Status.Listeners {
				if o.Name == l.Name {
					old = o.Conditions
				}
			}
			l.Conditions = mergeConditions(old, l.Conditions)
			next.Listeners = append(next.Listeners, l)
		}
		if apiequality.Semantic.DeepEqual(&next, &ls.Status) {
			return nil
		}
		ls.Status = next
		return w.update(ctx, ls, "ListenerSet")
	})
}

// mergeConditions is want, with the transition times of old where a
// condition's status did not change.
func mergeConditions(old, want []metav1.Condition) []metav1.Condition {
	next := append([]metav1.Condition(nil), old...)
	for _, c := range want {
		meta.SetStatusCondition(&next, c)
	}
	return onlyTypes(next, want)
}

// writeClass merges conditions into a GatewayClass's and sets its
// supported features (controllerName mode; the operator writes classes
// otherwise).
func (w *statusWriter) writeClass(ctx context.Context, name string, conds []metav1.Condition, features []gatewayv1.SupportedFeature) error {
	return w.retry(func(reader client.Reader) error {
		gc := &gatewayv1.GatewayClass{}
		if err := reader.Get(ctx, client.ObjectKey{Name: name}, gc); err != nil {
			return client.IgnoreNotFound(err)
		}
		next := gc.Status.DeepCopy()
		for _, c := range conds {
			c.ObservedGeneration = gc.Generation
			meta.SetStatusCondition(&next.Conditions, c)
		}
		next.SupportedFeatures = features
		if apiequality.Semantic.DeepEqual(next, &gc.Status) {
			return nil
		}
		gc.Status = *next
		return w.update(ctx, gc, "GatewayClass")
	})
}

// update writes obj's status and counts it.
func (w *statusWriter) update(ctx context.Context, obj client.Object, kind string) error {
	if err := w.client.Status().Update(ctx, obj); err != nil {
		if apierrors.IsInvalid(err) {
			// Retrying the same status cannot help, and would hold back
			// every other object's: say so, and go on.
			ctrl.LoggerFrom(ctx).Error(err, "the API server refuses our status", "kind", kind, "namespace", obj.GetNamespace(), "name", obj.GetName())
			statusRefusals.WithLabelValues(kind).Inc()
			return nil
		}
		return err
	}
	statusWrites.WithLabelValues(kind).Inc()
	w.wrote(obj)
	return nil
}

// onlyTypes keeps the conditions whose types want has.
func onlyTypes(conds, want []metav1.Condition) []metav1.Condition {
	var out []metav1.Condition
	for _, c := range conds {
		if meta.FindStatusCondition(want, c.Type) != nil {
			out = append(out, c)
		}
	}
	return out
}

// writeRoute replaces this Gateway's entries in a route's status.parents
// with parents (none removes them), keeping every other entry.
func (w *statusWriter) writeRoute(ctx context.Context, k translate.RouteKey, parents []gatewayv1.RouteParentStatus) error {
	return w.retry(func(reader client.Reader) error {
		obj, status := routeObject(k.Kind)
		if obj == nil {
			return nil
		}
		statusChecks.WithLabelValues(k.Kind).Inc()
		key := client.ObjectKey{Namespace: k.Namespace, Name: k.Name}
		err := reader.Get(ctx, key, obj)
		if p, ok := routeSpec(obj); err == nil && reader != w.live && ok && p.isStub() {
			// A stub (routeStubs) keeps no status: the route left us, and
			// our entries are removed from what the API server holds.
			err = w.live.Get(ctx, key, obj)
		}
		if err != nil {
			if apierrors.IsNotFound(err) {
				return nil
			}
			return err
		}
		rs := status(obj)
		next := mergeEntries(rs.Parents, parents, parentEntry, func(p gatewayv1.RouteParentStatus) bool {
			return w.ours(p.ControllerName, p.ParentRef, k.Namespace)
		})
		if apiequality.Semantic.DeepEqual(next, rs.Parents) || len(next) == 0 && len(rs.Parents) == 0 {
			return nil
		}
		rs.Parents = next
		return w.update(ctx, obj, k.Kind)
	})
}

// writePolicy replaces this Gateway's ancestor entries in a
// BackendTLSPolicy's status with ancestors (none removes them), keeping
// every other entry.
func (w *statusWriter) writePolicy(ctx context.Context, k types.NamespacedName, ancestors []gatewayv1.PolicyAncestorStatus) error {
	p := &gatewayv1.BackendTLSPolicy{}
	return w.writeAncestors(ctx, "BackendTLSPolicy", k, ancestors, p, &p.Status)
}

// writeTrafficPolicy is writePolicy for an XBackendTrafficPolicy.
func (w *statusWriter) writeTrafficPolicy(ctx context.Context, k types.NamespacedName, ancestors []gatewayv1.PolicyAncestorStatus) error {
	p := &gatewayxv1alpha1.XBackendTrafficPolicy{}
	return w.writeAncestors(ctx, "XBackendTrafficPolicy", k, ancestors, p, &p.Status)
}

// writeBackend is writePolicy for an XBackend, whose status holds the
// same entries under another type.
func (w *statusWriter) writeBackend(ctx context.Context, k types.NamespacedName, ancestors []gatewayv1.PolicyAncestorStatus) error {
	return w.retry(func(reader client.Reader) error {
		statusChecks.WithLabelValues("XBackend").Inc()
		b := &gatewayxv1alpha1.XBackend{}
		if err := reader.Get(ctx, k, b); err != nil {
			return client.IgnoreNotFound(err)
		}
		current := make([]gatewayv1.PolicyAncestorStatus, len(b.Status.Ancestors))
		for i, a := range b.Status.Ancestors {
			current[i] = gatewayv1.PolicyAncestorStatus{AncestorRef: a.AncestorRef, ControllerName: a.ControllerName, Conditions: a.Conditions}
		}
		next := mergeEntries(current, ancestors, ancestorEntry, func(a gatewayv1.PolicyAncestorStatus) bool {
			return w.ours(a.ControllerName, a.AncestorRef, k.Namespace)
		})
		if apiequality.Semantic.DeepEqual(next, current) || len(next) == 0 && len(current) == 0 {
			return nil
		}
		b.Status.Ancestors = make([]gatewayxv1alpha1.BackendAncestorStatus, len(next))
		for i, a := range next {
			b.Status.Ancestors[i] = gatewayxv1alpha1.BackendAncestorStatus{AncestorRef: a.AncestorRef, ControllerName: a.ControllerName, Conditions: a.Conditions}
		}
		return w.update(ctx, b, "XBackend")
	})
}

// writeAncestors replaces this Gateway's ancestor entries in the status
// of a policy of kind, read into obj, whose status is status.
func (w *statusWriter) writeAncestors(ctx context.Context, kind string, k types.NamespacedName, ancestors []gatewayv1.PolicyAncestorStatus, obj client.Object, status *gatewayv1.PolicyStatus) error {
	return w.retry(func(reader client.Reader) error {
		statusChecks.WithLabelValues(kind).Inc()
		if err := reader.Get(ctx, k, obj); err != nil {
			return client.IgnoreNotFound(err)
		}
		next := mergeEntries(status.Ancestors, ancestors, ancestorEntry, func(a gatewayv1.PolicyAncestorStatus) bool {
			return w.ours(a.ControllerName, a.AncestorRef, k.Namespace)
		})
		if apiequality.Semantic.DeepEqual(next, status.Ancestors) || len(next) == 0 && len(status.Ancestors) == 0 {
			return nil
		}
		status.Ancestors = next
		return w.update(ctx, obj, kind)
	})
}

// entry adapts a status list's element (a route's parent, a policy's
// ancestor) for mergeEntries: its key and its conditions.
type entry[E any] func(*E) (key string, conds *[]metav1.Condition)

func parentEntry(p *gatewayv1.RouteParentStatus) (string, *[]metav1.Condition) {
	return parentKey(p.ParentRef), &p.Conditions
}

func ancestorEntry(a *gatewayv1.PolicyAncestorStatus) (string, *[]metav1.Condition) {
	return parentKey(a.AncestorRef), &a.Conditions
}

// mergeEntries replaces the entries that are ours with desired, keeping
// every other entry. Entries stay where they are, so that controllers
// writing the same object agree on its order; an order that depended on
// who wrote last would have them rewrite it after each other forever.
func mergeEntries[E any](current, desired []E, of entry[E], ours func(E) bool) []E {
	want := make(map[string]int, len(desired))
	for i := range desired {
		k, _ := of(&desired[i])
		want[k] = i
	}
	// merge keeps the old conditions' transition times where the status
	// did not change.
	merge := func(old []metav1.Condition, e E) E {
		_, conds := of(&e)
		*conds = mergeConditions(old, *conds)
		return e
	}
	// Never nil: a route's status.parents and a policy's
	// status.ancestors are required, and an empty list (no entries) is
	// what the API server takes, not null.
	next := make([]E, 0, len(current)+len(desired))
	done := make([]bool, len(desired))
	for _, e := range current {
		if !ours(e) {
			next = append(next, e)
			continue
		}
		k, conds := of(&e)
		i, ok := want[k]
		if !ok || done[i] {
			continue
		}
		done[i] = true
		next = append(next, merge(*conds, desired[i]))
	}
	for i, e := range desired {
		if !done[i] {
			next = append(next, merge(nil, e))
		}
	}
	return next
}

// ours reports whether a status entry is this controller's for the served
// Gateway. In controllerName mode the controller owns its controllerName
// alone, so every entry with it is ours, also those of a Gateway it served
// before.
func (w *statusWriter) ours(controller gatewayv1.GatewayController, ref gatewayv1.ParentReference, objectNS string) bool {
	if string(controller) != w.opts.ControllerName {
		return false
	}
	if w.opts.Gateway.Name == "" {
		return true
	}
	ns := objectNS
	if ref.Namespace != nil {
		ns = string(*ref.Namespace)
	}
	if ref.Kind != nil && *ref.Kind == "ListenerSet" {
		// Entries for the ListenerSets attached to the Gateway, now or
		// before, are the Gateway's controller's.
		return w.sets[types.NamespacedName{Namespace: ns, Name: string(ref.Name)}]
	}
	return ns == w.gateway.Namespace && string(ref.Name) == w.gateway.Name
}

func parentKey(p gatewayv1.ParentReference) string {
	return fmt.Sprintf("%v/%v/%v/%s/%v/%v", deref(p.Group), deref(p.Kind), deref(p.Namespace), p.Name, deref(p.SectionName), deref(p.Port))
}

func deref[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}

// routeObject returns an empty object of a route kind and how to reach its
// RouteStatus.
func routeObject(kind string) (client.Object, func(client.Object) *gatewayv1.RouteStatus) {
	switch kind {
	case "HTTPRoute":
		return &gatewayv1.HTTPRoute{}, func(o client.Object) *gatewayv1.RouteStatus { return &o.(*gatewayv1.HTTPRoute).Status.RouteStatus }
	case "GRPCRoute":
		return &gatewayv1.GRPCRoute{}, func(o client.Object) *gatewayv1.RouteStatus { return &o.(*gatewayv1.GRPCRoute).Status.RouteStatus }
	case "TLSRoute":
		return &gatewayv1.TLSRoute{}, func(o client.Object) *gatewayv1.RouteStatus { return &o.(*gatewayv1.TLSRoute).Status.RouteStatus }
	case "TCPRoute":
		return &gatewayv1.TCPRoute{}, func(o client.Object) *gatewayv1.RouteStatus { return &o.(*gatewayv1.TCPRoute).Status.RouteStatus }
	case "UDPRoute":
		return &gatewayv1.UDPRoute{}, func(o client.Object) *gatewayv1.RouteStatus { return &o.(*gatewayv1.UDPRoute).Status.RouteStatus }
	}
	return nil, nil
}
