package provision

import (
	"context"
	"errors"
	"fmt"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"isobar.dev/operator/pkg/render"
)

// Refused is a rendered fleet the API server will not store: a label key
// it rejects, a node port outside the cluster's range, a quota exceeded.
// Retrying does not help; the profile or the Gateway must change.
type Refused struct{ err error }

func (e *Refused) Error() string { return e.err.Error() }
func (e *Refused) Unwrap() error { return e.err }

// IsRefused reports whether err is a Refused.
func IsRefused(err error) bool {
	var r *Refused
	return errors.As(err, &r)
}

// rbac reports the fleet's RBAC objects, which the dry run leaves out: no
// profile field shapes them, and the API server cannot try a binding to a
// role a dry run did not store (its escalation check reads the role).
func rbac(o client.Object) bool {
	switch o.(type) {
	case *rbacv1.Role, *rbacv1.RoleBinding, *rbacv1.ClusterRole, *rbacv1.ClusterRoleBinding:
		return true
	}
	return false
}

// DryRun has the API server validate and admit every object of a fleet but
// its RBAC (server-side apply with dryRun=All) without storing any, so that
// a fleet it would refuse is found before anything of a running fleet
// changes: the schema of a profile cannot know everything the API server
// checks. Every
// refusal is reported, joined in a Refused; other errors (the API server
// unreachable) are returned as they are, for a retry.
func DryRun(ctx context.Context, c client.Client, owner client.Object, ownerGVK schema.GroupVersionKind, f *render.Fleet) error {
	ref := metav1.NewControllerRef(owner, ownerGVK)
	var refused []error
	for _, o := range f.Namespaced {
		o.SetOwnerReferences([]metav1.OwnerReference{*ref})
	}
	for _, o := range append(append([]client.Object(nil), f.Namespaced...), f.ClusterScoped...) {
		if rbac(o) {
			continue
		}
		err := apply(ctx, c, o, client.DryRunAll)
		switch {
		case err == nil:
		case apierrors.IsInvalid(err), apierrors.IsBadRequest(err), apierrors.IsForbidden(err), apierrors.IsRequestEntityTooLargeError(err):
			refused = append(refused, err)
		default:
			return fmt.Errorf("dry run: %w", err)
		}
	}
	if len(refused) > 0 {
		return &Refused{errors.Join(refused...)}
	}
	return nil
}
