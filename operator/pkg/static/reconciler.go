// Package static reconciles ContourDeployments with spec.gateway into a
// fleet of their own (the static mode of Contour's Gateway API design): one controller in
// controllerName mode, serving the oldest Gateway of the oldest
// GatewayClass with that controllerName, and its Envoys.
package static

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"isobar.dev/api/certrefs"
	"isobar.dev/api/served"
	"isobar.dev/api/target"
	"isobar.dev/api/v1alpha1"
	"isobar.dev/operator/pkg/provision"
	"isobar.dev/operator/pkg/render"
	"isobar.dev/operator/pkg/rollout"
)

// Finalizer holds a static ContourDeployment until its cluster-scoped
// objects are deleted.
const Finalizer = "isobar.dev/static-fleet"

// Reconciler provisions static fleets.
type Reconciler struct {
	Client client.Client
	// APIReader reads what must not be stale: the certificate Secrets.
	APIReader client.Reader
	// OperatorControllerName is the operator's own controllerName, which a
	// static fleet may not take.
	OperatorControllerName string
	Images                 render.Images
	Now                    func() time.Time
	// NodePortRange is the API server's node port range.
	NodePortRange render.PortRange
	// Served are the optional kinds the cluster serves
	// (provision.OptionalKinds), which certificates are read from.
	Served served.Set
	// pool holds the fleet's place while it rolls to new images: a
	// static fleet is a pool of its own.
	pool rollout.Pool
}

// SetupWithManager watches ContourDeployments, what their fleets consist
// of, and the classes and Gateways whose listeners the Envoy Service
// publishes.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	b := ctrl.NewControllerManagedBy(mgr).Named("static")
	for _, o := range provision.Owned() {
		b = b.Owns(o)
	}
	for _, o := range provision.CertificateSources(r.Served) {
		b = b.Watches(o, handler.EnqueueRequestsFromMapFunc(r.staticProfiles), builder.WithPredicates(provision.CertificateSourceChanged))
	}
	return b.
		For(&v1alpha1.ContourDeployment{}).
		Watches(&gatewayv1.GatewayClass{}, handler.EnqueueRequestsFromMapFunc(r.staticProfiles)).
		Watches(&gatewayv1.Gateway{}, handler.EnqueueRequestsFromMapFunc(r.staticProfiles)).
		Complete(r)
}

// staticProfiles maps any class or Gateway change to every static profile:
// which Gateway is oldest can change with any of them, and static profiles
// are few.
func (r *Reconciler) staticProfiles(ctx context.Context, _ client.Object) []reconcile.Request {
	var list v1alpha1.ContourDeploymentList
	if err := r.Client.List(ctx, &list); err != nil {
		return nil
	}
	var out []reconcile.Request
	for _, cd := range list.Items {
		if cd.Spec.Gateway != nil {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&cd)})
		}
	}
	return out
}

func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	cd := &v1alpha1.ContourDeployment{}
	if err := r.Client.Get(ctx, req.NamespacedName, cd); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	stand := standIn(cd, nil)
	if cd.Spec.Gateway == nil || !cd.DeletionTimestamp.IsZero() {
		if !controllerutil.ContainsFinalizer(cd, Finalizer) {
			return ctrl.Result{}, nil
		}
		if err := provision.Release(ctx, r.Client, render.NamesOf(stand)); err != nil {
			return ctrl.Result{}, err
		}
		controllerutil.RemoveFinalizer(cd, Finalizer)
		return ctrl.Result{}, r.Client.Update(ctx, cd)
	}
	if cd.Spec.Gateway.ControllerName == r.OperatorControllerName {
		return ctrl.Result{}, r.setCondition(ctx, cd, false, v1alpha1.ReasonInvalid,
			fmt.Sprintf("spec.gateway.controllerName %s is the operator's own; a static fleet needs a controllerName of its own", r.OperatorControllerName))
	}
	if controllerutil.AddFinalizer(cd, Finalizer) {
		if err := r.Client.Update(ctx, cd); err != nil {
			return ctrl.Result{}, err
		}
	}
	served, err := r.served(ctx, cd.Spec.Gateway.ControllerName)
	if err != nil {
		return ctrl.Result{}, err
	}
	stand = standIn(cd, served)
	scaled, err := provision.Autoscaled(ctx, r.Client, cd.Namespace)
	if err != nil {
		return ctrl.Result{}, err
	}
	var refs []certrefs.Ref
	if served != nil {
		if refs, err = provision.CertificateRefs(ctx, r.Client, served, cd.Spec.Gateway.ControllerName, cd.Spec.RuntimeSettings, r.Served); err != nil {
			return ctrl.Result{}, err
		}
	}
	f, err := render.Render(render.Input{Gateway: stand, ControllerName: cd.Spec.Gateway.ControllerName, Spec: cd.Spec, Images: r.Images, Static: true, Autoscaled: scaled, NodePortRange: r.NodePortRange, CertificateRefs: refs})
	if err != nil {
		return ctrl.Result{}, r.setCondition(ctx, cd, false, v1alpha1.ReasonInvalid, err.Error())
	}
	gvk := v1alpha1.GroupVersion.WithKind("ContourDeployment")
	// Dry run first, so that a fleet the API server refuses changes
	// nothing of the running one.
	if err := provision.DryRun(ctx, r.Client, cd, gvk, f); err != nil {
		if !provision.IsRefused(err) {
			return ctrl.Result{}, err
		}
		return ctrl.Result{RequeueAfter: 5 * time.Minute}, r.setCondition(ctx, cd, false, v1alpha1.ReasonInvalid, "the API server refuses the fleet: "+err.Error()+"; a running fleet keeps running as last provisioned")
	}
	fleetName := rollout.FleetName(cd.Namespace, cd.Name)
	d, err := provision.Order(ctx, r.Client, cd, f, provision.Rollout{Pool: &r.pool, Name: "ContourDeployment/" + fleetName, Fleet: fleetName, Limit: 1})
	if err != nil {
		return ctrl.Result{}, err
	}
	renewAt, _, err := provision.Fleet(ctx, r.Client, r.APIReader, cd, gvk, f, d, r.Now())
	if err != nil {
		return ctrl.Result{}, err
	}
	if d.Step == rollout.Controller || d.Step == rollout.Envoy {
		reason := v1alpha1.ReasonRollingOut
		if d.Stuck {
			reason = v1alpha1.ReasonControllerNotReady
		}
		return ctrl.Result{RequeueAfter: 5 * time.Second}, r.setCondition(ctx, cd, false, reason, d.Message)
	}
	msg := fmt.Sprintf("controller %s (controllerName %s) and Envoy %s %s provisioned", f.Names.Controller, cd.Spec.Gateway.ControllerName, provision.EnvoyKind(f), f.Names.Envoy)
	if served == nil {
		msg += "; no Gateway with this controllerName yet, so no Envoy Service"
	} else {
		msg += fmt.Sprintf("; Envoy Service %s publishes Gateway %s/%s", f.Names.Envoy, served.Namespace, served.Name)
	}
	if err := r.setCondition(ctx, cd, true, v1alpha1.ReasonProvisioned, msg); err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{RequeueAfter: time.Until(renewAt) + time.Second}, nil
}

// standIn is the Gateway the renderer sees: the ContourDeployment's name
// and namespace, and the listeners of the Gateway the fleet serves.
func standIn(cd *v1alpha1.ContourDeployment, served *gatewayv1.Gateway) *gatewayv1.Gateway {
	g := &gatewayv1.Gateway{
		ObjectMeta: metav1.ObjectMeta{Name: cd.Name, Namespace: cd.Namespace, UID: cd.UID},
		Spec:       gatewayv1.GatewaySpec{GatewayClassName: "static"},
	}
	if served != nil {
		g.Spec.Listeners = served.Spec.Listeners
		g.Spec.Addresses = served.Spec.Addresses
	}
	return g
}

// served is the Gateway the controller will serve, by the rule it applies
// itself (target.Pick): the oldest Gateway of the oldest class.
func (r *Reconciler) served(ctx context.Context, controllerName string) (*gatewayv1.Gateway, error) {
	var classes gatewayv1.GatewayClassList
	if err := r.Client.List(ctx, &classes); err != nil {
		return nil, err
	}
	var gateways gatewayv1.GatewayList
	if err := r.Client.List(ctx, &gateways); err != nil {
		return nil, err
	}
	gws := make([]*gatewayv1.Gateway, len(gateways.Items))
	for i := range gateways.Items {
		gws[i] = &gateways.Items[i]
	}
	cls := make([]*gatewayv1.GatewayClass, len(classes.Items))
	for i := range classes.Items {
		cls[i] = &classes.Items[i]
	}
	t := target.Pick(cls, gws, controllerName)
	for _, g := range gws {
		if g.Namespace == t.Gateway.Namespace && g.Name == t.Gateway.Name {
			return g, nil
		}
	}
	return nil, nil
}

func (r *Reconciler) setCondition(ctx context.Context, cd *v1alpha1.ContourDeployment, ok bool, reason, msg string) error {
	c := metav1.Condition{Type: v1alpha1.ConditionProvisioned, Status: metav1.ConditionFalse, Reason: reason, Message: msg, ObservedGeneration: cd.Generation}
	if ok {
		c.Status = metav1.ConditionTrue
	}
	if old := meta.FindStatusCondition(cd.Status.Conditions, c.Type); old != nil && old.Status == c.Status && old.Reason == c.Reason && old.Message == c.Message && old.ObservedGeneration == c.ObservedGeneration {
		return nil
	}
	meta.SetStatusCondition(&cd.Status.Conditions, c)
	return r.Client.Status().Update(ctx, cd)
}
