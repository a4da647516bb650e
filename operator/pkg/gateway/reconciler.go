// Package gateway provisions a fleet for each Gateway of a GatewayClass
// with the operator's controllerName, and keeps it as rendered.
package gateway

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"isobar.dev/api/fleet"
	"isobar.dev/api/profile"
	"isobar.dev/operator/pkg/gatewayclass"
	"isobar.dev/operator/pkg/params"
	"isobar.dev/operator/pkg/provision"
	"isobar.dev/operator/pkg/render"
)

// Finalizer holds a Gateway until its cluster-scoped objects, which cannot
// be owned by it, are deleted.
const Finalizer = "isobar.dev/fleet"

// ConditionProvisioned is the one Gateway condition the operator writes:
// whether the fleet is provisioned, or why not.
const ConditionProvisioned = "isobar.dev/Provisioned"

// Reconciler provisions fleets.
type Reconciler struct {
	Client client.Client
	// APIReader reads what must not be stale: the certificate Secrets.
	APIReader      client.Reader
	ControllerName string
	Images         render.Images
	Recorder       events.EventRecorder
	// Now is the clock certificates are issued by.
	Now func() time.Time
}

func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	log := ctrl.LoggerFrom(ctx)
	gw := &gatewayv1.Gateway{}
	if err := r.Client.Get(ctx, req.NamespacedName, gw); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	class := &gatewayv1.GatewayClass{}
	err := r.Client.Get(ctx, types.NamespacedName{Name: string(gw.Spec.GatewayClassName)}, class)
	if err != nil && !apierrors.IsNotFound(err) {
		return ctrl.Result{}, err
	}
	ours := err == nil && string(class.Spec.ControllerName) == r.ControllerName
	if !ours || !gw.DeletionTimestamp.IsZero() {
		// Not (or no longer) ours, or going away: the namespaced objects
		// go with their owner; the cluster-scoped ones go here.
		return ctrl.Result{}, r.release(ctx, gw)
	}
	if controllerutil.AddFinalizer(gw, Finalizer) {
		if err := r.Client.Update(ctx, gw); err != nil {
			return ctrl.Result{}, err
		}
	}

	classProfile, err := gatewayclass.Check(ctx, r.Client, class)
	if err != nil {
		if !profile.IsInvalid(err) {
			return ctrl.Result{}, err
		}
		msg := fmt.Sprintf("GatewayClass %s is not accepted: %v", class.Name, err)
		return ctrl.Result{}, r.refuse(ctx, gw, string(gatewayv1.GatewayReasonPending), msg)
	}
	p, err := profile.ForGateway(gw, classProfile, params.Lookup(ctx, r.Client))
	if err != nil {
		if profile.IsInvalid(err) {
			return ctrl.Result{}, r.refuse(ctx, gw, string(gatewayv1.GatewayReasonInvalidParameters), err.Error())
		}
		return ctrl.Result{}, err
	}
	scaled, err := provision.Autoscaled(ctx, r.Client, gw.Namespace)
	if err != nil {
		return ctrl.Result{}, err
	}
	f, err := render.Render(render.Input{Gateway: gw, ControllerName: r.ControllerName, Spec: p.Spec, Images: r.Images, Autoscaled: scaled})
	if errors.Is(err, render.ErrUnsupportedAddress) {
		return ctrl.Result{}, r.refuse(ctx, gw, string(gatewayv1.GatewayReasonUnsupportedAddress), err.Error())
	}
	if err != nil {
		return ctrl.Result{}, r.refuse(ctx, gw, string(gatewayv1.GatewayReasonInvalidParameters), err.Error())
	}

	renewAt, issued, err := provision.Fleet(ctx, r.Client, r.APIReader, gw, gatewayv1.SchemeGroupVersion.WithKind("Gateway"), f, render.Labels(gw, fleet.Controller), r.Now())
	if err != nil {
		return ctrl.Result{}, err
	}
	for _, name := range issued {
		r.Recorder.Eventf(gw, nil, corev1.EventTypeNormal, "CertificatesWritten", "Provision", "wrote certificate Secret %s", name)
	}
	msg := fmt.Sprintf("controller %s and Envoy %s %s provisioned; Envoy Service %s", f.Names.Controller, provision.EnvoyKind(f), f.Names.Envoy, f.Names.Envoy)
	if err := r.setCondition(ctx, gw, metav1.ConditionTrue, "Provisioned", msg, false); err != nil {
		return ctrl.Result{}, err
	}
	log.V(1).Info("provisioned", "gateway", req.NamespacedName, "renewAt", renewAt)
	return ctrl.Result{RequeueAfter: time.Until(renewAt) + time.Second}, nil
}

// release deletes the Gateway's cluster-scoped objects and drops the
// finalizer.
func (r *Reconciler) release(ctx context.Context, gw *gatewayv1.Gateway) error {
	if !controllerutil.ContainsFinalizer(gw, Finalizer) {
		return nil
	}
	if err := provision.Release(ctx, r.Client, render.NamesOf(gw)); err != nil {
		return err
	}
	controllerutil.RemoveFinalizer(gw, Finalizer)
	return r.Client.Update(ctx, gw)
}

// refuse records why the Gateway gets no fleet. No controller runs for it,
// so the operator also says so in Accepted, as the Gateway API asks.
func (r *Reconciler) refuse(ctx context.Context, gw *gatewayv1.Gateway, reason, msg string) error {
	r.Recorder.Eventf(gw, nil, corev1.EventTypeWarning, reason, "Provision", "%s", msg)
	return r.setCondition(ctx, gw, metav1.ConditionFalse, reason, msg, true)
}

// setCondition writes the Provisioned condition (and, refusing, Accepted
// false), only when it changes.
func (r *Reconciler) setCondition(ctx context.Context, gw *gatewayv1.Gateway, status metav1.ConditionStatus, reason, msg string, refused bool) error {
	conds := []metav1.Condition{{Type: ConditionProvisioned, Status: status, Reason: reason, Message: msg, ObservedGeneration: gw.Generation}}
	if refused {
		conds = append(conds, metav1.Condition{Type: string(gatewayv1.GatewayConditionAccepted), Status: metav1.ConditionFalse, Reason: reason, Message: msg, ObservedGeneration: gw.Generation})
	}
	changed := false
	for _, c := range conds {
		changed = setCondition(&gw.Status.Conditions, c) || changed
	}
	if !changed {
		return nil
	}
	err := r.Client.Status().Update(ctx, gw)
	if apierrors.IsConflict(err) {
		return errors.New("the Gateway changed while its status was written; retrying")
	}
	return err
}
