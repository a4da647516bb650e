package provision

import (
	"context"
	"fmt"
	"slices"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"isobar.dev/operator/pkg/render"
	"isobar.dev/operator/pkg/rollout"
)

// Fleet makes the cluster hold a rendered fleet: certificates issued or
// renewed as needed, every namespaced object applied and owned by owner
// (a Gateway, or a ContourDeployment in static mode), the cluster-scoped
// ones applied, leftovers of an earlier rendering pruned. The workloads
// the rollout decision d holds (Order) are left as the cluster holds them.
// It returns when the next certificate renewal is due and the Secrets it
// issued.
//
// The certificate Secrets are read from live, not from the cache: a cache
// that has not yet seen the CA Secret just created would have a second CA
// issued over it, and Pods started in between would hold certificates the
// other side no longer trusts.
func Fleet(ctx context.Context, c client.Client, live client.Reader, owner client.Object, ownerGVK schema.GroupVersionKind, f *render.Fleet, d rollout.Decision, now time.Time) (time.Time, []string, error) {
	secrets, renewAt, err := certSecrets(ctx, live, owner.GetNamespace(), f.Names, f.SecretLabels, now)
	if err != nil {
		return time.Time{}, nil, fmt.Errorf("certificates: %w", err)
	}
	ref := metav1.NewControllerRef(owner, ownerGVK)
	var issued []string
	for _, s := range secrets {
		s.OwnerReferences = []metav1.OwnerReference{*ref}
		s.Annotations = f.SecretAnnotations
		if err := apply(ctx, c, s); err != nil {
			return time.Time{}, nil, err
		}
		issued = append(issued, s.Name)
	}
	for _, o := range f.Namespaced {
		if held(f, d, o) {
			continue
		}
		o.SetOwnerReferences([]metav1.OwnerReference{*ref})
		if err := apply(ctx, c, o); err != nil {
			return time.Time{}, nil, err
		}
	}
	for _, o := range slices.Concat(f.ClusterScoped, f.Grants) {
		if err := apply(ctx, c, o); err != nil {
			return time.Time{}, nil, err
		}
	}
	if err := prune(ctx, c, owner, f, d.HoldEnvoy); err != nil {
		return time.Time{}, nil, err
	}
	return renewAt, issued, pruneGrants(ctx, c, f.Names, f.Grants)
}

// pruneGrants deletes the certificate grants of a fleet but those kept:
// a Gateway that no longer references a namespace's certificates leaves
// its controller no access there.
func pruneGrants(ctx context.Context, c client.Client, n render.Names, keep []client.Object) error {
	kept := map[string]bool{}
	for _, o := range keep {
		kept[fmt.Sprintf("%T/%s/%s", o, o.GetNamespace(), o.GetName())] = true
	}
	var roles rbacv1.RoleList
	var bindings rbacv1.RoleBindingList
	mine := client.MatchingLabels{render.LabelCertificateGrant: n.ClusterRole}
	if err := c.List(ctx, &roles, mine); err != nil {
		return fmt.Errorf("listing certificate grants: %w", err)
	}
	if err := c.List(ctx, &bindings, mine); err != nil {
		return fmt.Errorf("listing certificate grants: %w", err)
	}
	var found []client.Object
	for i := range roles.Items {
		found = append(found, &roles.Items[i])
	}
	for i := range bindings.Items {
		found = append(found, &bindings.Items[i])
	}
	for _, o := range found {
		if o.GetName() != n.ClusterRole || kept[fmt.Sprintf("%T/%s/%s", o, o.GetNamespace(), o.GetName())] {
			continue
		}
		if err := c.Delete(ctx, o); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("deleting certificate grant %s/%s: %w", o.GetNamespace(), o.GetName(), err)
		}
	}
	return nil
}

// Release deletes a fleet's cluster-scoped objects and certificate
// grants; its namespaced ones go with their owner.
func Release(ctx context.Context, c client.Client, n render.Names) error {
	for _, o := range []client.Object{&rbacv1.ClusterRoleBinding{}, &rbacv1.ClusterRole{}} {
		o.SetName(n.ClusterRole)
		if err := c.Delete(ctx, o); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("deleting %T %s: %w", o, n.ClusterRole, err)
		}
	}
	return pruneGrants(ctx, c, n, nil)
}

// EnvoyKind is the kind of the fleet's Envoy workload.
func EnvoyKind(f *render.Fleet) string {
	for _, o := range f.Namespaced {
		if o.GetName() == f.Names.Envoy {
			switch o.(type) {
			case *appsv1.DaemonSet:
				return "DaemonSet"
			case *appsv1.Deployment:
				return "Deployment"
			}
		}
	}
	return "workload"
}

// prune deletes what an earlier rendering created and this one does not:
// the other Envoy workload kind after a workloadType switch, a PDB no longer
// asked for. An Envoy workload the rollout holds stays, of either kind.
func prune(ctx context.Context, c client.Client, owner client.Object, f *render.Fleet, holdEnvoy bool) error {
	rendered := map[string]bool{}
	for _, o := range f.Namespaced {
		rendered[fmt.Sprintf("%T/%s", o, o.GetName())] = true
	}
	kinds := []client.Object{&policyv1.PodDisruptionBudget{}}
	if !holdEnvoy {
		kinds = append(kinds, &appsv1.DaemonSet{}, &appsv1.Deployment{})
	}
	for _, o := range kinds {
		o.SetNamespace(owner.GetNamespace())
		o.SetName(f.Names.Envoy)
		if rendered[fmt.Sprintf("%T/%s", o, o.GetName())] {
			continue
		}
		err := c.Get(ctx, client.ObjectKeyFromObject(o), o)
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return err
		}
		if !metav1.IsControlledBy(o, owner) {
			continue
		}
		if err := c.Delete(ctx, o); client.IgnoreNotFound(err) != nil {
			return err
		}
	}
	return nil
}

// Owned are the namespaced kinds a fleet consists of: its owner's
// reconciler watches them, so an edited or deleted one is put back.
func Owned() []client.Object {
	return []client.Object{
		&appsv1.Deployment{}, &appsv1.DaemonSet{}, &corev1.Service{}, &corev1.ServiceAccount{}, &corev1.ConfigMap{},
		&corev1.Secret{}, &rbacv1.Role{}, &rbacv1.RoleBinding{}, &policyv1.PodDisruptionBudget{},
	}
}

// Autoscaled returns the Deployments in ns that a HorizontalPodAutoscaler
// scales.
func Autoscaled(ctx context.Context, c client.Reader, ns string) (map[string]bool, error) {
	var hpas autoscalingv2.HorizontalPodAutoscalerList
	if err := c.List(ctx, &hpas, client.InNamespace(ns)); err != nil {
		return nil, fmt.Errorf("listing HorizontalPodAutoscalers: %w", err)
	}
	out := map[string]bool{}
	for _, h := range hpas.Items {
		if t := h.Spec.ScaleTargetRef; t.Kind == "Deployment" && (t.APIVersion == "apps/v1" || t.APIVersion == "") {
			out[t.Name] = true
		}
	}
	return out, nil
}
