package render

import (
	"slices"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"isobar.dev/api/certrefs"
	"isobar.dev/api/fleet"
)

// LabelCertificateGrant marks the Roles and RoleBindings that let a
// controller read its Gateway's certificates; its value is the fleet's
// ClusterRole name, which names them in every namespace.
const LabelCertificateGrant = "isobar.dev/certificate-grant"

// certificateGrants lets the controller read exactly the Secrets and
// ConfigMaps its Gateway can use (Input.CertificateRefs): in each namespace
// that holds one, a Role with their names and a RoleBinding to the
// controller's ServiceAccount. A rule never has empty resourceNames, which
// would grant every object of its kind: a namespace without references
// gets no Role.
func (r *renderer) certificateGrants() []client.Object {
	byNamespace := map[string]map[string][]string{} // namespace -> resource -> names
	for _, ref := range r.in.CertificateRefs {
		resource := "secrets"
		if ref.Kind == certrefs.ConfigMap {
			resource = "configmaps"
		}
		if byNamespace[ref.Namespace] == nil {
			byNamespace[ref.Namespace] = map[string][]string{}
		}
		byNamespace[ref.Namespace][resource] = append(byNamespace[ref.Namespace][resource], ref.Name)
	}
	namespaces := make([]string, 0, len(byNamespace))
	for ns := range byNamespace {
		namespaces = append(namespaces, ns)
	}
	slices.Sort(namespaces)
	var out []client.Object
	for _, ns := range namespaces {
		meta := r.meta(r.names.ClusterRole, fleet.Controller)
		meta.Namespace = ns
		meta.Labels[LabelGatewayNamespace] = r.in.Gateway.Namespace
		meta.Labels[LabelCertificateGrant] = r.names.ClusterRole
		role := &rbacv1.Role{
			TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "Role"},
			ObjectMeta: meta,
		}
		for _, resource := range []string{"configmaps", "secrets"} {
			names := byNamespace[ns][resource]
			if len(names) == 0 {
				continue
			}
			slices.Sort(names)
			// list and watch by name: the controller watches each object
			// with the field selector metadata.name, which RBAC checks
			// against resourceNames.
			role.Rules = append(role.Rules, rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{resource}, ResourceNames: slices.Compact(names), Verbs: readOnly})
		}
		binding := &rbacv1.RoleBinding{
			TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "RoleBinding"},
			ObjectMeta: *meta.DeepCopy(),
			RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: role.Name},
			Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: r.names.ControllerAccount, Namespace: r.in.Gateway.Namespace}},
		}
		out = append(out, role, binding)
	}
	return out
}
