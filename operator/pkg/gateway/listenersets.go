package gateway

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"isobar.dev/api/listenerset"
	"isobar.dev/operator/pkg/provision"
)

// listeners returns the listeners whose ports the fleet's Service
// publishes: the Gateway's own and those of the ListenerSets it allows
// (api/listenerset decides which, for the controller too).
func (r *Reconciler) listeners(ctx context.Context, gw *gatewayv1.Gateway) ([]gatewayv1.Listener, error) {
	if !r.Served[provision.ListenerSetKind] {
		return gw.Spec.Listeners, nil
	}
	var sets gatewayv1.ListenerSetList
	if err := r.Client.List(ctx, &sets); err != nil {
		return nil, fmt.Errorf("listing ListenerSets: %w", err)
	}
	var mine []*gatewayv1.ListenerSet
	for i := range sets.Items {
		if listenerset.ParentIs(&sets.Items[i], gw) {
			mine = append(mine, &sets.Items[i])
		}
	}
	if len(mine) == 0 {
		return gw.Spec.Listeners, nil
	}
	var lookupErr error
	labels := func(name string) (map[string]string, bool) {
		ns := &corev1.Namespace{}
		if err := r.Client.Get(ctx, types.NamespacedName{Name: name}, ns); err != nil {
			if client.IgnoreNotFound(err) != nil && lookupErr == nil {
				lookupErr = fmt.Errorf("reading namespace %s: %w", name, err)
			}
			return nil, false
		}
		return ns.Labels, true
	}
	out := listenerset.Listeners(gw, listenerset.Of(gw, mine, labels))
	return out, lookupErr
}

// gatewayOfListenerSet maps a ListenerSet to the Gateway its parentRef
// names: its listeners' ports are that Gateway's Service's.
func gatewayOfListenerSet(_ context.Context, o client.Object) []reconcile.Request {
	ls, ok := o.(*gatewayv1.ListenerSet)
	if !ok {
		return nil
	}
	if parent, ok := listenerset.Parent(ls); ok {
		return []reconcile.Request{{NamespacedName: parent}}
	}
	return nil
}

// gatewaysSelectingNamespaces maps a namespace whose labels changed to the
// Gateways that pick ListenerSets by namespace labels: a ListenerSet there
// may have come or gone, and its ports with it.
func (r *Reconciler) gatewaysSelectingNamespaces(ctx context.Context, _ client.Object) []reconcile.Request {
	var list gatewayv1.GatewayList
	if err := r.Client.List(ctx, &list); err != nil {
		return nil
	}
	var out []reconcile.Request
	for _, gw := range list.Items {
		if a := gw.Spec.AllowedListeners; a != nil && a.Namespaces != nil && a.Namespaces.From != nil && *a.Namespaces.From == gatewayv1.NamespacesFromSelector {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&gw)})
		}
	}
	return out
}
