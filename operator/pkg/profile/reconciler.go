// Package profile keeps each ContourDeployment's status in step: whether
// fleets can be rendered from it, and which GatewayClasses and Gateways use
// it.
package profile

import (
	"context"
	"fmt"
	"slices"
	"strings"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	apiprofile "isobar.dev/api/profile"
	"isobar.dev/api/v1alpha1"
	"isobar.dev/operator/pkg/index"
	"isobar.dev/operator/pkg/provision"
	"isobar.dev/operator/pkg/render"
)

// maxGateways caps the Gateways listed in a status (the CRD's limit).
const maxGateways = 256

// Reconciler writes ContourDeployment status.
type Reconciler struct {
	Client         client.Client
	ControllerName string
	// NodePortRange is the API server's node port range, which profiles
	// are checked against.
	NodePortRange render.PortRange
}

// SetupWithManager watches profiles and what refers to them.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("contourdeployment").
		For(&v1alpha1.ContourDeployment{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&gatewayv1.GatewayClass{}, handler.EnqueueRequestsFromMapFunc(classProfile), builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&gatewayv1.Gateway{}, handler.EnqueueRequestsFromMapFunc(r.gatewayProfiles), builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Complete(r)
}

func classProfile(_ context.Context, o client.Object) []reconcile.Request {
	ref, ok := apiprofile.ClassRef(o.(*gatewayv1.GatewayClass))
	if !ok {
		return nil
	}
	return []reconcile.Request{{NamespacedName: ref}}
}

// gatewayProfiles maps a Gateway to its own profile and its class's.
func (r *Reconciler) gatewayProfiles(ctx context.Context, o client.Object) []reconcile.Request {
	gw := o.(*gatewayv1.Gateway)
	var out []reconcile.Request
	if ref, ok := apiprofile.GatewayRef(gw); ok {
		out = append(out, reconcile.Request{NamespacedName: ref})
	}
	gc := &gatewayv1.GatewayClass{}
	if err := r.Client.Get(ctx, types.NamespacedName{Name: string(gw.Spec.GatewayClassName)}, gc); err == nil {
		out = append(out, classProfile(ctx, gc)...)
	}
	return out
}

func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	cd := &v1alpha1.ContourDeployment{}
	if err := r.Client.Get(ctx, req.NamespacedName, cd); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	key := client.ObjectKeyFromObject(cd)
	classes, err := index.ClassesOfProfile(ctx, r.Client, key)
	if err != nil {
		return ctrl.Result{}, err
	}
	next := cd.Status.DeepCopy()
	next.GatewayClasses = nil
	for _, gc := range classes {
		if string(gc.Spec.ControllerName) == r.ControllerName {
			next.GatewayClasses = append(next.GatewayClasses, gc.Name)
		}
	}
	slices.Sort(next.GatewayClasses)
	gateways, err := index.GatewaysOfProfile(ctx, r.Client, key, next.GatewayClasses)
	if err != nil {
		return ctrl.Result{}, err
	}
	var refs []v1alpha1.GatewayReference
	for _, gw := range gateways {
		refs = append(refs, v1alpha1.GatewayReference{Namespace: gw.Namespace, Name: gw.Name})
	}
	slices.SortFunc(refs, func(a, b v1alpha1.GatewayReference) int {
		return strings.Compare(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name)
	})
	next.GatewayCount = int32(len(refs))
	next.Gateways = refs[:min(len(refs), maxGateways)]
	next.ObservedGeneration = cd.Generation
	cond := metav1.Condition{Type: v1alpha1.ConditionAccepted, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonAccepted,
		Message: "fleets can be rendered from this profile", ObservedGeneration: cd.Generation}
	if err := render.Check(cd.Spec, r.NodePortRange); err != nil {
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, v1alpha1.ReasonInvalid, err.Error()
	} else if err := r.dryRun(ctx, cd, gateways, refs); err != nil {
		if !provision.IsRefused(err) {
			return ctrl.Result{}, err
		}
		cond.Status, cond.Reason = metav1.ConditionFalse, v1alpha1.ReasonInvalid
		cond.Message = "the API server refuses a fleet rendered from this profile: " + err.Error()
	}
	meta.SetStatusCondition(&next.Conditions, cond)
	if apiequality.Semantic.DeepEqual(next, &cd.Status) {
		return ctrl.Result{}, nil
	}
	cd.Status = *next
	return ctrl.Result{}, r.Client.Status().Update(ctx, cd)
}

// dryRun renders a fleet from the profile alone and has the API server
// try it: what the schema cannot check (label and annotation keys, the
// cluster's node port range, admission) is found when the profile
// changes, not when a Gateway's fleet is next applied. The fleet is that
// of the first Gateway using the profile, so that its own objects (its
// node ports) do not count as conflicts, or of a stand-in Gateway named
// after the profile with a listener on each port the profile pins.
func (r *Reconciler) dryRun(ctx context.Context, cd *v1alpha1.ContourDeployment, gateways []gatewayv1.Gateway, users []v1alpha1.GatewayReference) error {
	var owner client.Object = cd
	gvk := v1alpha1.GroupVersion.WithKind("ContourDeployment")
	gw := &gatewayv1.Gateway{ObjectMeta: metav1.ObjectMeta{Name: cd.Name, Namespace: cd.Namespace}, Spec: gatewayv1.GatewaySpec{GatewayClassName: "dry-run"}}
	for _, p := range cd.Spec.Envoy.NetworkPublishing.NodePorts {
		gw.Spec.Listeners = append(gw.Spec.Listeners, gatewayv1.Listener{Name: gatewayv1.SectionName(fmt.Sprintf("tcp-%d", p.Port)), Port: p.Port, Protocol: gatewayv1.TCPProtocolType})
	}
	if len(gw.Spec.Listeners) == 0 {
		gw.Spec.Listeners = []gatewayv1.Listener{{Name: "http", Port: 80, Protocol: gatewayv1.HTTPProtocolType}}
	}
	if len(users) > 0 {
		for i := range gateways {
			if gateways[i].Namespace == users[0].Namespace && gateways[i].Name == users[0].Name {
				gw, owner, gvk = &gateways[i], &gateways[i], schema.FromAPIVersionAndKind(gatewayv1.GroupVersion.String(), "Gateway")
			}
		}
	}
	f, err := render.Render(render.Input{Gateway: gw, ControllerName: r.ControllerName, Spec: cd.Spec})
	if err != nil {
		// render.Check passed: what is left is the Gateway's own (its
		// addresses), which its status reports.
		return nil
	}
	return provision.DryRun(ctx, r.Client, owner, gvk, f)
}
