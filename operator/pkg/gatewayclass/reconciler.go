// Package gatewayclass reconciles the GatewayClasses with the operator's
// controllerName: it checks their parametersRef and the installed Gateway
// API version, and writes their status.
package gatewayclass

import (
	"context"
	"fmt"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	"sigs.k8s.io/gateway-api/pkg/consts"

	"isobar.dev/api/profile"
	"isobar.dev/api/supported"
	"isobar.dev/api/v1alpha1"
	"isobar.dev/operator/pkg/index"
	"isobar.dev/operator/pkg/params"
	"isobar.dev/operator/pkg/render"
)

// ConditionSupportedVersion says whether the installed Gateway API CRDs are
// a version Isobar supports (the Gateway API's condition type).
const ConditionSupportedVersion = "SupportedVersion"

// Reconciler writes the status of our GatewayClasses.
type Reconciler struct {
	Client         client.Client
	ControllerName string
	// NodePortRange is the API server's node port range, which profiles
	// are checked against.
	NodePortRange render.PortRange
}

// SetupWithManager watches our classes, the ContourDeployments they refer
// to, and the Gateway API CRDs (their version and fields decide
// SupportedVersion and the features claimed).
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	ours := predicate.NewPredicateFuncs(func(o client.Object) bool {
		gc, ok := o.(*gatewayv1.GatewayClass)
		return ok && string(gc.Spec.ControllerName) == r.ControllerName
	})
	gatewayAPI := predicate.NewPredicateFuncs(func(o client.Object) bool {
		return strings.HasSuffix(o.GetName(), "."+gatewayv1.GroupName)
	})
	return ctrl.NewControllerManagedBy(mgr).
		Named("gatewayclass").
		For(&gatewayv1.GatewayClass{}, builder.WithPredicates(ours, predicate.GenerationChangedPredicate{})).
		Watches(&v1alpha1.ContourDeployment{}, handler.EnqueueRequestsFromMapFunc(r.classesOf)).
		Watches(&apiextensionsv1.CustomResourceDefinition{}, handler.EnqueueRequestsFromMapFunc(r.allClasses), builder.WithPredicates(gatewayAPI)).
		Complete(r)
}

// allClasses maps a Gateway API CRD to every class (ours are filtered in
// Reconcile).
func (r *Reconciler) allClasses(ctx context.Context, _ client.Object) []reconcile.Request {
	var list gatewayv1.GatewayClassList
	if err := r.Client.List(ctx, &list); err != nil {
		return nil
	}
	out := make([]reconcile.Request, 0, len(list.Items))
	for _, gc := range list.Items {
		out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Name: gc.Name}})
	}
	return out
}

// classesOf maps a ContourDeployment to the classes that refer to it.
func (r *Reconciler) classesOf(ctx context.Context, o client.Object) []reconcile.Request {
	classes, err := index.ClassesOfProfile(ctx, r.Client, client.ObjectKeyFromObject(o))
	if err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "mapping a ContourDeployment to its GatewayClasses")
		return nil
	}
	var out []reconcile.Request
	for _, gc := range classes {
		if string(gc.Spec.ControllerName) == r.ControllerName {
			out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Name: gc.Name}})
		}
	}
	return out
}

func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	gc := &gatewayv1.GatewayClass{}
	if err := r.Client.Get(ctx, req.NamespacedName, gc); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if string(gc.Spec.ControllerName) != r.ControllerName {
		return ctrl.Result{}, nil
	}
	_, paramsErr := Check(ctx, r.Client, gc, r.NodePortRange)
	if paramsErr != nil && !profile.IsInvalid(paramsErr) {
		return ctrl.Result{}, paramsErr
	}
	next := supported.ClassStatus(gc, paramsErr, supported.Claimed(func(f supported.Field) bool { return r.served(ctx, f) }))
	meta.SetStatusCondition(&next.Conditions, r.supportedVersion(ctx, gc.Generation))
	// Keep transition times of unchanged conditions.
	merged := gc.Status.DeepCopy()
	for _, c := range next.Conditions {
		meta.SetStatusCondition(&merged.Conditions, c)
	}
	merged.SupportedFeatures = next.SupportedFeatures
	if apiequality.Semantic.DeepEqual(merged, &gc.Status) {
		return ctrl.Result{}, nil
	}
	gc.Status = *merged
	return ctrl.Result{}, r.Client.Status().Update(ctx, gc)
}

// Check resolves a class's parametersRef and renders a fleet from it for a
// sample Gateway, so that a profile the operator could not use is refused
// on the class, where a person sees it, rather than on every Gateway.
// It returns the class's resolved profile.
func Check(ctx context.Context, c client.Reader, gc *gatewayv1.GatewayClass, nodePorts render.PortRange) (*profile.Profile, error) {
	p, err := profile.ForClass(gc, params.Lookup(ctx, c))
	if err != nil {
		return nil, err
	}
	if err := render.Check(p.Spec, nodePorts); err != nil {
		return nil, profile.Invalidf("ContourDeployment %s: %v", p.Sources, err)
	}
	return p, nil
}

// supportedVersion compares the installed Gateway API CRDs' bundle version
// with the one Isobar is built against: the same minor version is
// supported.
func (r *Reconciler) supportedVersion(ctx context.Context, generation int64) metav1.Condition {
	c := metav1.Condition{Type: ConditionSupportedVersion, ObservedGeneration: generation}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := r.Client.Get(ctx, types.NamespacedName{Name: "gateways.gateway.networking.k8s.io"}, crd); err != nil {
		c.Status, c.Reason, c.Message = metav1.ConditionUnknown, string(gatewayv1.GatewayClassReasonUnsupportedVersion), "reading the Gateway CRD: "+err.Error()
		return c
	}
	installed := crd.Annotations[consts.BundleVersionAnnotation]
	if minor(installed) == minor(consts.BundleVersion) && installed != "" {
		c.Status, c.Reason, c.Message = metav1.ConditionTrue, string(gatewayv1.GatewayClassReasonSupportedVersion), "Gateway API "+installed+" is supported"
		return c
	}
	c.Status, c.Reason = metav1.ConditionFalse, string(gatewayv1.GatewayClassReasonUnsupportedVersion)
	c.Message = fmt.Sprintf("Gateway API CRDs %q are installed; Isobar supports %s", installed, minor(consts.BundleVersion)+".x")
	return c
}

// served reports whether the installed CRD's served v1 schema has the
// field.
func (r *Reconciler) served(ctx context.Context, f supported.Field) bool {
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := r.Client.Get(ctx, types.NamespacedName{Name: f.CRD}, crd); err != nil {
		return false
	}
	for _, v := range crd.Spec.Versions {
		if v.Name != "v1" || !v.Served || v.Schema == nil {
			continue
		}
		s := v.Schema.OpenAPIV3Schema
		for _, p := range f.Path {
			for s != nil && s.Type == "array" && s.Items != nil {
				s = s.Items.Schema
			}
			if s == nil {
				return false
			}
			child, ok := s.Properties[p]
			if !ok {
				return false
			}
			s = &child
		}
		return true
	}
	return false
}

// minor is "v1.6" of "v1.6.3".
func minor(v string) string {
	parts := strings.SplitN(v, ".", 3)
	if len(parts) < 2 {
		return v
	}
	return parts[0] + "." + parts[1]
}
