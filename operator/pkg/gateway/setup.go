package gateway

import (
	"context"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"isobar.dev/api/fleet"
	"isobar.dev/api/v1alpha1"
	"isobar.dev/operator/pkg/index"
	"isobar.dev/operator/pkg/provision"
	"isobar.dev/operator/pkg/render"
)

// SetupWithManager watches Gateways, everything a fleet consists of (so an
// edited or deleted object is put back), and the classes and profiles
// fleets are rendered from.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	b := ctrl.NewControllerManagedBy(mgr).Named("gateway")
	for _, o := range provision.Owned() {
		b = b.Owns(o)
	}
	for _, o := range provision.CertificateSources(r.Served) {
		b = b.Watches(o, handler.EnqueueRequestsFromMapFunc(r.allGateways), builder.WithPredicates(provision.CertificateSourceChanged))
	}
	// The certificate grants outside the Gateway's namespace have no owner
	// reference; their labels name the Gateway.
	b = b.Watches(&rbacv1.Role{}, handler.EnqueueRequestsFromMapFunc(gatewayOfClusterScoped)).
		Watches(&rbacv1.RoleBinding{}, handler.EnqueueRequestsFromMapFunc(gatewayOfClusterScoped))
	if r.Served[provision.ListenerSetKind] {
		b = b.Watches(&gatewayv1.ListenerSet{}, handler.EnqueueRequestsFromMapFunc(gatewayOfListenerSet), builder.WithPredicates(predicate.GenerationChangedPredicate{})).
			Watches(&corev1.Namespace{}, handler.EnqueueRequestsFromMapFunc(r.gatewaysSelectingNamespaces), builder.WithPredicates(predicate.LabelChangedPredicate{}))
	}
	return b.
		// Status-only changes (the controller's, ours) need no work.
		For(&gatewayv1.Gateway{}, builder.WithPredicates(predicate.Or(predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}, predicate.LabelChangedPredicate{}))).
		Watches(&rbacv1.ClusterRole{}, handler.EnqueueRequestsFromMapFunc(gatewayOfClusterScoped)).
		Watches(&rbacv1.ClusterRoleBinding{}, handler.EnqueueRequestsFromMapFunc(gatewayOfClusterScoped)).
		// A class's spec decides its Gateways' fleets (gatewayclass.Check
		// reads the spec, not the status); the class reconciler's status
		// writes would re-queue every Gateway of the class for nothing.
		Watches(&gatewayv1.GatewayClass{}, handler.EnqueueRequestsFromMapFunc(r.gatewaysOfClass), builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		// An autoscaler appearing or going changes who owns replicas.
		Watches(&autoscalingv2.HorizontalPodAutoscaler{}, handler.EnqueueRequestsFromMapFunc(r.gatewaysInNamespace)).
		Watches(&v1alpha1.ContourDeployment{}, handler.EnqueueRequestsFromMapFunc(r.gatewaysOfProfile)).
		Complete(r)
}

// gatewayOfClusterScoped maps a ClusterRole or binding back to its Gateway
// through its labels.
func gatewayOfClusterScoped(_ context.Context, o client.Object) []reconcile.Request {
	l := o.GetLabels()
	if l[fleet.LabelManagedBy] != fleet.ManagedBy || l[render.LabelGatewayNamespace] == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: l[render.LabelGatewayNamespace], Name: l[fleet.LabelGatewayName]}}}
}

func (r *Reconciler) gatewaysOfClass(ctx context.Context, o client.Object) []reconcile.Request {
	gws, err := index.GatewaysOfClass(ctx, r.Client, o.GetName())
	if err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "mapping a GatewayClass to its Gateways")
		return nil
	}
	return requests(gws)
}

// gatewaysOfProfile maps a ContourDeployment to the Gateways rendered from
// it: through their class, or their own parametersRef.
func (r *Reconciler) gatewaysOfProfile(ctx context.Context, o client.Object) []reconcile.Request {
	cd := client.ObjectKeyFromObject(o)
	classes, err := index.ClassesOfProfile(ctx, r.Client, cd)
	if err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "mapping a ContourDeployment to its Gateways")
		return nil
	}
	names := make([]string, 0, len(classes))
	for _, gc := range classes {
		names = append(names, gc.Name)
	}
	gws, err := index.GatewaysOfProfile(ctx, r.Client, cd, names)
	if err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "mapping a ContourDeployment to its Gateways")
		return nil
	}
	return requests(gws)
}

func requests(gws []gatewayv1.Gateway) []reconcile.Request {
	out := make([]reconcile.Request, 0, len(gws))
	for _, gw := range gws {
		out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&gw)})
	}
	return out
}

// allGateways maps a change that may concern any Gateway (a
// ReferenceGrant, an IngressClass) to all of them: such changes are rare,
// and a Gateway not of ours costs one cache read.
func (r *Reconciler) allGateways(ctx context.Context, _ client.Object) []reconcile.Request {
	return r.gateways(ctx)
}

func (r *Reconciler) gatewaysInNamespace(ctx context.Context, o client.Object) []reconcile.Request {
	return r.gateways(ctx, client.InNamespace(o.GetNamespace()))
}

func (r *Reconciler) gateways(ctx context.Context, opts ...client.ListOption) []reconcile.Request {
	var list gatewayv1.GatewayList
	if err := r.Client.List(ctx, &list, opts...); err != nil {
		return nil
	}
	out := make([]reconcile.Request, 0, len(list.Items))
	for _, gw := range list.Items {
		out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&gw)})
	}
	return out
}
