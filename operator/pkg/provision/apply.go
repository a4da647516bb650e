package provision

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// FieldOwner is the one field manager the operator applies with, so that
// fields other controllers own (an HPA's replicas, a cloud provider's
// annotations) stay theirs.
const FieldOwner = "isobar-operator"

// apply server-side applies obj as rendered: only the fields the operator
// sets, never status.
func apply(ctx context.Context, c client.Client, obj client.Object, opts ...client.ApplyOption) error {
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return fmt.Errorf("converting %T: %w", obj, err)
	}
	delete(u, "status")
	if m, ok := u["metadata"].(map[string]any); ok {
		delete(m, "creationTimestamp")
	}
	ac := client.ApplyConfigurationFromUnstructured(&unstructured.Unstructured{Object: u})
	if err := c.Apply(ctx, ac, append([]client.ApplyOption{client.FieldOwner(FieldOwner), client.ForceOwnership}, opts...)...); err != nil {
		return fmt.Errorf("applying %s %s: %w", obj.GetObjectKind().GroupVersionKind().Kind, obj.GetName(), err)
	}
	return nil
}
