// Package gateway provisions a fleet for each Gateway of a GatewayClass
// with the operator's controllerName, and keeps it as rendered.
package gateway

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"isobar.dev/api/addresses"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"isobar.dev/api/profile"
	"isobar.dev/api/served"
	"isobar.dev/api/v1alpha1"
	"isobar.dev/operator/pkg/gatewayclass"
	"isobar.dev/operator/pkg/params"
	"isobar.dev/operator/pkg/provision"
	"isobar.dev/operator/pkg/render"
	"isobar.dev/operator/pkg/rollout"
)

// Finalizer holds a Gateway until its cluster-scoped objects, which cannot
// be owned by it, are deleted.
const Finalizer = "isobar.dev/fleet"

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
	// NodePortRange is the API server's node port range.
	NodePortRange render.PortRange
	// Served are the optional kinds the cluster serves
	// (provision.OptionalKinds): a served ListenerSet's listeners' ports
	// are published too, and certificates are read from each.
	Served served.Set
	// tried holds, by Gateway UID, the sum of the last rendering the API
	// server accepted in a dry run: a fleet is tried before it is applied
	// only when it changed, not on every status change of its pods.
	tried sync.Map
	// pool bounds the fleets of a class that roll to new images at once.
	pool rollout.Pool
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

	classProfile, err := gatewayclass.Check(ctx, r.Client, class, r.NodePortRange)
	if err != nil {
		if !profile.IsInvalid(err) {
			return ctrl.Result{}, err
		}
		msg := fmt.Sprintf("GatewayClass %s is not accepted: %v", class.Name, err)
		return ctrl.Result{}, r.notApplied(ctx, gw, render.NamesOf(gw), gatewayv1.GatewayReasonPending, msg)
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
	listeners, err := r.listeners(ctx, gw)
	if err != nil {
		return ctrl.Result{}, err
	}
	refs, err := provision.CertificateRefs(ctx, r.Client, gw, r.ControllerName, p.Spec.RuntimeSettings, r.Served)
	if err != nil {
		return ctrl.Result{}, err
	}
	f, err := render.Render(render.Input{Gateway: gw, Listeners: listeners, ControllerName: r.ControllerName, Spec: p.Spec, Images: r.Images, Autoscaled: scaled, NodePortRange: r.NodePortRange, CertificateRefs: refs})
	if errors.Is(err, render.ErrUnsupportedAddress) {
		// The message is the address's own, which offline translation
		// reports too.
		var u *addresses.Unsupported
		msg := err.Error()
		if errors.As(err, &u) {
			msg = u.Error()
		}
		return ctrl.Result{}, r.refuse(ctx, gw, string(gatewayv1.GatewayReasonUnsupportedAddress), msg)
	}
	if err != nil {
		return ctrl.Result{}, r.notApplied(ctx, gw, render.NamesOf(gw), gatewayv1.GatewayReasonInvalidParameters, fmt.Sprintf("the fleet cannot be rendered from %s: %v", from(p.Sources), err))
	}

	gvk := schema.FromAPIVersionAndKind(gatewayv1.GroupVersion.String(), "Gateway")
	sum := render.Sum(f)
	if last, ok := r.tried.Load(gw.UID); !ok || last != sum {
		if err := provision.DryRun(ctx, r.Client, gw, gvk, f); err != nil {
			if !provision.IsRefused(err) {
				return ctrl.Result{}, err
			}
			return ctrl.Result{RequeueAfter: refusedRetry}, r.notApplied(ctx, gw, f.Names, gatewayv1.GatewayReasonInvalidParameters, fmt.Sprintf("the API server refuses the fleet rendered from %s: %v", from(p.Sources), err))
		}
		r.tried.Store(gw.UID, sum)
	}
	d, err := provision.Order(ctx, r.Client, gw, f, provision.Rollout{Pool: &r.pool, Name: "GatewayClass/" + class.Name, Fleet: rollout.FleetName(gw.Namespace, gw.Name), Limit: int(p.Spec.Rollout.MaxFleets)})
	if err != nil {
		return ctrl.Result{}, err
	}
	renewAt, issued, err := provision.Fleet(ctx, r.Client, r.APIReader, gw, gvk, f, d, r.Now())
	if err != nil {
		// The dry run passed, so this is rare (a conflict, a webhook that
		// changed its mind); say so and retry.
		r.Recorder.Eventf(gw, nil, corev1.EventTypeWarning, "ProvisioningFailed", "Provision", "%v", err)
		if serr := r.setCondition(ctx, gw, metav1.ConditionFalse, "ProvisioningFailed", err.Error(), false); serr != nil {
			log.Error(serr, "writing the Provisioned condition")
		}
		return ctrl.Result{}, err
	}
	for _, name := range issued {
		r.Recorder.Eventf(gw, nil, corev1.EventTypeNormal, "CertificatesWritten", "Provision", "wrote certificate Secret %s", name)
	}
	if reason, rolling := rolloutReason(d); rolling {
		if d.Stuck {
			r.Recorder.Eventf(gw, nil, corev1.EventTypeWarning, reason, "Rollout", "%s", d.Message)
		}
		if err := r.setCondition(ctx, gw, metav1.ConditionFalse, reason, d.Message, false); err != nil {
			return ctrl.Result{}, err
		}
		// A queued fleet waits for others, whose progress does not
		// wake it; the others wake on their own workloads' status.
		return ctrl.Result{RequeueAfter: min(time.Until(renewAt)+time.Second, queuedRetry)}, nil
	}
	msg := fmt.Sprintf("controller %s and Envoy %s %s provisioned; Envoy Service %s", f.Names.Controller, provision.EnvoyKind(f), f.Names.Envoy, f.Names.Envoy)
	if err := r.setCondition(ctx, gw, metav1.ConditionTrue, v1alpha1.ReasonProvisioned, msg, false); err != nil {
		return ctrl.Result{}, err
	}
	log.V(1).Info("provisioned", "gateway", req.NamespacedName, "renewAt", renewAt)
	return ctrl.Result{RequeueAfter: time.Until(renewAt) + time.Second}, nil
}

// queuedRetry is how often a fleet that rolls, or waits to, looks again.
const queuedRetry = 5 * time.Second

// rolloutReason is the Provisioned reason of a fleet that rolls to new
// images, or waits to.
func rolloutReason(d rollout.Decision) (string, bool) {
	switch {
	case d.Step == rollout.Queued:
		return v1alpha1.ReasonRolloutQueued, true
	case d.Stuck:
		return v1alpha1.ReasonControllerNotReady, true
	case d.Step == rollout.Controller || d.Step == rollout.Envoy:
		return v1alpha1.ReasonRollingOut, true
	}
	return "", false
}

// refusedRetry is how soon a fleet the API server refused is tried again
// without a change to its inputs: admission can depend on what the
// profile does not say (quotas, webhooks, the node port range).
const refusedRetry = 5 * time.Minute

// notApplied reports a fleet that cannot be applied. A fleet that runs
// keeps running as it was provisioned: nothing of it was changed. A
// Gateway without one gets Accepted false too, since no controller will
// ever report on it.
func (r *Reconciler) notApplied(ctx context.Context, gw *gatewayv1.Gateway, names render.Names, reason gatewayv1.GatewayConditionReason, msg string) error {
	running := &appsv1.Deployment{}
	err := r.Client.Get(ctx, types.NamespacedName{Namespace: gw.Namespace, Name: names.Controller}, running)
	if apierrors.IsNotFound(err) {
		return r.refuse(ctx, gw, string(reason), msg)
	}
	if err != nil {
		return err
	}
	msg += "; the fleet keeps running as last provisioned"
	r.Recorder.Eventf(gw, nil, corev1.EventTypeWarning, string(reason), "Provision", "%s", msg)
	return r.setCondition(ctx, gw, metav1.ConditionFalse, string(reason), msg, false)
}

// from names where a fleet is rendered from.
func from(sources []types.NamespacedName) string {
	if len(sources) == 0 {
		return "the Gateway and the default profile"
	}
	return fmt.Sprintf("ContourDeployment %s", sources)
}

// release deletes the Gateway's cluster-scoped objects and drops the
// finalizer.
func (r *Reconciler) release(ctx context.Context, gw *gatewayv1.Gateway) error {
	r.tried.Delete(gw.UID)
	r.pool.Release(rollout.FleetName(gw.Namespace, gw.Name))
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
// so the operator also says so in Accepted and Programmed, as the Gateway
// API asks.
func (r *Reconciler) refuse(ctx context.Context, gw *gatewayv1.Gateway, reason, msg string) error {
	r.Recorder.Eventf(gw, nil, corev1.EventTypeWarning, reason, "Provision", "%s", msg)
	return r.setCondition(ctx, gw, metav1.ConditionFalse, reason, msg, true)
}

// setCondition writes the Provisioned condition (and, refusing, Accepted
// and Programmed false), only when it changes.
func (r *Reconciler) setCondition(ctx context.Context, gw *gatewayv1.Gateway, status metav1.ConditionStatus, reason, msg string, refused bool) error {
	conds := []metav1.Condition{{Type: v1alpha1.GatewayConditionProvisioned, Status: status, Reason: reason, Message: msg, ObservedGeneration: gw.Generation}}
	if refused {
		conds = append(conds,
			metav1.Condition{Type: string(gatewayv1.GatewayConditionAccepted), Status: metav1.ConditionFalse, Reason: reason, Message: msg, ObservedGeneration: gw.Generation},
			metav1.Condition{Type: string(gatewayv1.GatewayConditionProgrammed), Status: metav1.ConditionFalse, Reason: string(gatewayv1.GatewayReasonInvalid), Message: "no fleet is provisioned: " + msg, ObservedGeneration: gw.Generation})
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
