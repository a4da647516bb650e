package serve

import (
	"context"
	"fmt"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	gatewayv1alpha2 "sigs.k8s.io/gateway-api/apis/v1alpha2"

	"isobar.dev/controller/pkg/gatewayapi"
	"isobar.dev/controller/pkg/xdsserver"
)

// statusCache remembers which routes carry an entry of ours, so that an
// entry is removed when its route stops referring to the Gateway.
type statusCache struct {
	routes map[gatewayapi.RouteKey]bool
}

// writeStatus writes the Gateway's status and this Gateway's entries in its
// routes' status, each only when it changed, retrying on conflicts: many
// controllers write the same routes.
func (w *statusWriter) writeStatus(ctx context.Context, st *gatewayapi.Status, fleet xdsserver.FleetStatus, addresses []gatewayv1.GatewayStatusAddress) error {
	if gs, ok := st.Gateways[w.opts.Gateway]; ok {
		if err := w.writeGateway(ctx, programmed(*gs, fleet, addresses, w.opts.EnvoyService != ""), addresses); err != nil {
			return err
		}
	}
	written := map[gatewayapi.RouteKey]bool{}
	for k, parents := range st.Routes {
		written[k] = true
		if err := w.writeRoute(ctx, k, parents); err != nil {
			return err
		}
	}
	for k := range w.written.routes {
		if !written[k] {
			if err := w.writeRoute(ctx, k, nil); err != nil {
				return err
			}
		}
	}
	w.written.routes = written
	return nil
}

// programmed sets the Gateway's Programmed condition from the fleet: the
// configuration is programmed once an address is assigned and every
// connected Envoy has acknowledged it.
func programmed(gs gatewayv1.GatewayStatus, fleet xdsserver.FleetStatus, addresses []gatewayv1.GatewayStatusAddress, needAddress bool) gatewayv1.GatewayStatus {
	out := *gs.DeepCopy()
	cond := meta.FindStatusCondition(out.Conditions, string(gatewayv1.GatewayConditionProgrammed))
	if cond == nil || cond.Status != metav1.ConditionTrue {
		return out
	}
	set := func(reason gatewayv1.GatewayConditionReason, msg string) {
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, string(reason), msg
	}
	switch {
	case needAddress && len(addresses) == 0:
		set(gatewayv1.GatewayReasonAddressNotAssigned, "the Envoy Service has no address yet")
	case fleet.Connected == 0:
		set(gatewayv1.GatewayReasonPending, "no Envoy of the fleet is connected")
	case len(fleet.Rejections) > 0:
		set(gatewayv1.GatewayReasonInvalid, fmt.Sprintf("Envoy rejected the configuration: %v", fleet.Rejections))
	case !fleet.Acknowledged:
		set(gatewayv1.GatewayReasonPending, fmt.Sprintf("waiting for %d connected Envoys to acknowledge the configuration", fleet.Connected))
	}
	return out
}

func (w *statusWriter) writeGateway(ctx context.Context, desired gatewayv1.GatewayStatus, addresses []gatewayv1.GatewayStatusAddress) error {
	return w.retry(func(reader client.Reader) error {
		gw := &gatewayv1.Gateway{}
		if err := reader.Get(ctx, w.opts.Gateway, gw); err != nil {
			return client.IgnoreNotFound(err)
		}
		next := gw.Status.DeepCopy()
		for _, c := range desired.Conditions {
			meta.SetStatusCondition(&next.Conditions, c)
		}
		listeners := make([]gatewayv1.ListenerStatus, len(desired.Listeners))
		for i, l := range desired.Listeners {
			listeners[i] = l
			listeners[i].Conditions = nil
			var old []metav1.Condition
			for _, o := range gw.Status.Listeners {
				if o.Name == l.Name {
					old = o.Conditions
				}
			}
			listeners[i].Conditions = append([]metav1.Condition(nil), old...)
			for _, c := range l.Conditions {
				meta.SetStatusCondition(&listeners[i].Conditions, c)
			}
			listeners[i].Conditions = onlyTypes(listeners[i].Conditions, l.Conditions)
		}
		next.Listeners = listeners
		next.Addresses = addresses
		if apiequality.Semantic.DeepEqual(next, &gw.Status) {
			return nil
		}
		gw.Status = *next
		if err := w.client.Status().Update(ctx, gw); err != nil {
			return err
		}
		statusWrites.WithLabelValues("Gateway").Inc()
		return nil
	})
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
func (w *statusWriter) writeRoute(ctx context.Context, k gatewayapi.RouteKey, parents []gatewayv1.RouteParentStatus) error {
	return w.retry(func(reader client.Reader) error {
		obj, status := routeObject(k.Kind)
		if obj == nil {
			return nil
		}
		if err := reader.Get(ctx, client.ObjectKey{Namespace: k.Namespace, Name: k.Name}, obj); err != nil {
			if apierrors.IsNotFound(err) {
				return nil
			}
			return err
		}
		rs := status(obj)
		next := mergeParents(rs.Parents, parents, func(p gatewayv1.RouteParentStatus) bool { return w.ours(p, k.Namespace) })
		if apiequality.Semantic.DeepEqual(next, rs.Parents) || len(next) == 0 && len(rs.Parents) == 0 {
			return nil
		}
		rs.Parents = next
		if err := w.client.Status().Update(ctx, obj); err != nil {
			return err
		}
		statusWrites.WithLabelValues(k.Kind).Inc()
		return nil
	})
}

// mergeParents replaces the entries that are ours with desired, keeping
// every other entry. Entries stay where they are, so that controllers
// writing the same route agree on its order; an order that depended on who
// wrote last would have them rewrite it after each other forever.
func mergeParents(current, desired []gatewayv1.RouteParentStatus, ours func(gatewayv1.RouteParentStatus) bool) []gatewayv1.RouteParentStatus {
	want := make(map[string]int, len(desired))
	for i, p := range desired {
		want[parentKey(p.ParentRef)] = i
	}
	// merge keeps the old conditions' transition times where the status
	// did not change.
	merge := func(old []metav1.Condition, p gatewayv1.RouteParentStatus) gatewayv1.RouteParentStatus {
		conds := append([]metav1.Condition(nil), old...)
		for _, c := range p.Conditions {
			meta.SetStatusCondition(&conds, c)
		}
		p.Conditions = onlyTypes(conds, p.Conditions)
		return p
	}
	var next []gatewayv1.RouteParentStatus
	done := make([]bool, len(desired))
	for _, p := range current {
		if !ours(p) {
			next = append(next, p)
			continue
		}
		i, ok := want[parentKey(p.ParentRef)]
		if !ok || done[i] {
			continue
		}
		done[i] = true
		next = append(next, merge(p.Conditions, desired[i]))
	}
	for i, p := range desired {
		if !done[i] {
			next = append(next, merge(nil, p))
		}
	}
	return next
}

// ours reports whether a parent entry is this controller's for this
// Gateway.
func (w *statusWriter) ours(p gatewayv1.RouteParentStatus, routeNS string) bool {
	if string(p.ControllerName) != w.opts.ControllerName {
		return false
	}
	ns := routeNS
	if p.ParentRef.Namespace != nil {
		ns = string(*p.ParentRef.Namespace)
	}
	return ns == w.opts.Gateway.Namespace && string(p.ParentRef.Name) == w.opts.Gateway.Name
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
		return &gatewayv1alpha2.TCPRoute{}, func(o client.Object) *gatewayv1.RouteStatus { return &o.(*gatewayv1alpha2.TCPRoute).Status.RouteStatus }
	case "UDPRoute":
		return &gatewayv1alpha2.UDPRoute{}, func(o client.Object) *gatewayv1.RouteStatus { return &o.(*gatewayv1alpha2.UDPRoute).Status.RouteStatus }
	}
	return nil, nil
}
