package gatewayapi

import (
	"slices"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"isobar.dev/controller/pkg/backendtls"
)

// policyAncestor records that this Gateway uses a BackendTLSPolicy, and is
// where the policies it beat report their conflict.
func (t *gatewayTranslator) policyAncestor(bt *backendtls.Policy) {
	t.recordAncestor(bt)
	for _, l := range bt.Losers {
		t.recordAncestor(l)
	}
}

func (t *gatewayTranslator) recordAncestor(bt *backendtls.Policy) {
	k := types.NamespacedName{Namespace: bt.Object.Namespace, Name: bt.Object.Name}
	ns := gatewayv1.Namespace(t.gw.Namespace)
	ref := gatewayv1.ParentReference{Group: ptr.To(gatewayv1.Group(gatewayv1.GroupName)), Kind: ptr.To(gatewayv1.Kind("Gateway")), Namespace: &ns, Name: gatewayv1.ObjectName(t.gw.Name)}
	for _, a := range t.status.BackendTLSPolicies[k] {
		if a.AncestorRef.Name == ref.Name && ptr.Deref(a.AncestorRef.Namespace, "") == ns {
			return
		}
	}
	t.status.BackendTLSPolicies[k] = append(t.status.BackendTLSPolicies[k], gatewayv1.PolicyAncestorStatus{
		AncestorRef: ref, ControllerName: t.controller, Conditions: slices.Clone(bt.Conditions.Sorted()),
	})
}
