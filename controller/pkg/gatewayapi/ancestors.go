package gatewayapi

import (
	"slices"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"isobar.dev/controller/pkg/backend"
	"isobar.dev/controller/pkg/backendtls"
	"isobar.dev/controller/pkg/backendtraffic"
	"isobar.dev/controller/pkg/condition"
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
	t.ancestor(t.status.BackendTLSPolicies, bt.Object.Namespace, bt.Object.Name, bt.Conditions)
}

// trafficAncestor records that this Gateway uses an
// XBackendTrafficPolicy, and is where the policies it beat report their
// conflict.
func (t *gatewayTranslator) trafficAncestor(p *backendtraffic.Policy) {
	for _, q := range append([]*backendtraffic.Policy{p}, p.Losers...) {
		t.ancestor(t.status.BackendTrafficPolicies, q.Object.Namespace, q.Object.Name, q.Conditions)
	}
}

// backendAncestor records that this Gateway uses an XBackend.
func (t *gatewayTranslator) backendAncestor(x *backend.ExternalBackend) {
	t.ancestor(t.status.Backends, x.Object.Namespace, x.Object.Name, x.Conditions)
}

// targetNotFound reports to the policies targeting svc, a Service this
// Gateway's routes name and that does not exist, that their target is
// not found: the Policy Attachment GEP's status for it, under the
// Gateway that would have used it.
func (t *gatewayTranslator) targetNotFound(svc types.NamespacedName) {
	notFound := func(generation int64) condition.Policy {
		c := condition.Policy{Generation: generation}
		c.Set(gatewayv1.PolicyConditionAccepted, false, gatewayv1.PolicyReasonTargetNotFound, "Service "+svc.String()+" does not exist")
		return c
	}
	if p := t.traffic[svc]; p != nil {
		t.ancestor(t.status.BackendTrafficPolicies, p.Object.Namespace, p.Object.Name, notFound(p.Object.Generation))
	}
	if p := backendtls.For(t.env, svc, ""); p != nil {
		t.ancestor(t.status.BackendTLSPolicies, p.Object.Namespace, p.Object.Name, notFound(p.Object.Generation))
	}
}

// ancestor adds this Gateway's entry, once, to a policy's ancestors.
func (t *gatewayTranslator) ancestor(into map[types.NamespacedName][]gatewayv1.PolicyAncestorStatus, namespace, name string, conds condition.Policy) {
	k := types.NamespacedName{Namespace: namespace, Name: name}
	ns := gatewayv1.Namespace(t.gw.Namespace)
	ref := gatewayv1.ParentReference{Group: ptr.To(gatewayv1.Group(gatewayv1.GroupName)), Kind: ptr.To(gatewayv1.Kind("Gateway")), Namespace: &ns, Name: gatewayv1.ObjectName(t.gw.Name)}
	for _, a := range into[k] {
		if a.AncestorRef.Name == ref.Name && ptr.Deref(a.AncestorRef.Namespace, "") == ns {
			return
		}
	}
	into[k] = append(into[k], gatewayv1.PolicyAncestorStatus{
		AncestorRef: ref, ControllerName: t.controller, Conditions: slices.Clone(conds.Sorted()),
	})
}
