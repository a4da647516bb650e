package render

import (
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"isobar.dev/api/fleet"
)

var (
	readOnly    = []string{"get", "list", "watch"}
	writeStatus = []string{"get", "update", "patch"}
)

// controllerRole lets the controller elect a leader in its namespace (a
// Lease, and the events leader election records; a Pod by name, to free
// the Lease of a leader whose Pod is gone) and its replicas report their
// Envoys to the leader (a Lease each, which the leader watches, and which
// a replica deletes as it stops).
func (r *renderer) controllerRole() (*rbacv1.Role, *rbacv1.RoleBinding) {
	role := &rbacv1.Role{
		TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "Role"},
		ObjectMeta: r.meta(r.names.Controller, fleet.Controller),
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"get", "list", "watch", "create", "update", "delete"}},
			{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"create", "patch"}},
			{APIGroups: []string{"events.k8s.io"}, Resources: []string{"events"}, Verbs: []string{"create", "patch"}},
			{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get"}},
		},
	}
	binding := &rbacv1.RoleBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "RoleBinding"},
		ObjectMeta: r.meta(r.names.Controller, fleet.Controller),
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: r.names.ControllerAccount, Namespace: r.in.Gateway.Namespace}},
	}
	return role, binding
}

// controllerClusterRole lets the controller read what it translates, in
// every namespace (routes may live anywhere), but for Secrets and
// ConfigMaps, which it reads only by name (certificateGrants), and write
// only the status of what it reports on.
func (r *renderer) controllerClusterRole() (*rbacv1.ClusterRole, *rbacv1.ClusterRoleBinding) {
	meta := r.meta(r.names.ClusterRole, fleet.Controller)
	meta.Namespace = ""
	meta.Labels[LabelGatewayNamespace] = r.in.Gateway.Namespace
	gw := "gateway.networking.k8s.io"
	role := &rbacv1.ClusterRole{
		TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole"},
		ObjectMeta: meta,
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{gw}, Resources: []string{"gatewayclasses", "gateways", "httproutes", "grpcroutes", "tlsroutes", "tcproutes", "udproutes", "listenersets", "referencegrants", "backendtlspolicies"}, Verbs: readOnly},
			{APIGroups: []string{gw}, Resources: []string{"gateways/status", "httproutes/status", "grpcroutes/status", "tlsroutes/status", "tcproutes/status", "udproutes/status", "listenersets/status", "backendtlspolicies/status"}, Verbs: writeStatus},
			// The experimental channel's backend traffic policies.
			{APIGroups: []string{"gateway.networking.x-k8s.io"}, Resources: []string{"xbackendtrafficpolicies", "xbackends"}, Verbs: readOnly},
			{APIGroups: []string{"gateway.networking.x-k8s.io"}, Resources: []string{"xbackendtrafficpolicies/status", "xbackends/status"}, Verbs: writeStatus},
			// Secrets and ConfigMaps only by name, in certificateGrants.
			{APIGroups: []string{""}, Resources: []string{"services", "namespaces"}, Verbs: readOnly},
			{APIGroups: []string{"discovery.k8s.io"}, Resources: []string{"endpointslices"}, Verbs: readOnly},
			// Ingresses of the IngressClasses naming the Gateway are
			// served on its ingress_http and ingress_https listeners;
			// what cannot be served is told in Events (an Ingress has no
			// conditions).
			{APIGroups: []string{"networking.k8s.io"}, Resources: []string{"ingresses", "ingressclasses"}, Verbs: readOnly},
			{APIGroups: []string{"networking.k8s.io"}, Resources: []string{"ingresses/status"}, Verbs: writeStatus},
			// Contour's HTTPProxies of those IngressClasses are served the
			// same way, with the status Contour writes.
			{APIGroups: []string{"projectcontour.io"}, Resources: []string{"httpproxies", "tlscertificatedelegations", "extensionservices"}, Verbs: readOnly},
			{APIGroups: []string{"projectcontour.io"}, Resources: []string{"httpproxies/status", "extensionservices/status"}, Verbs: writeStatus},
			{APIGroups: []string{"events.k8s.io"}, Resources: []string{"events"}, Verbs: []string{"create", "patch"}},
		},
	}
	if r.in.Static {
		// In controllerName mode the controller writes class status too.
		role.Rules = append(role.Rules, rbacv1.PolicyRule{APIGroups: []string{gw}, Resources: []string{"gatewayclasses/status"}, Verbs: writeStatus})
	}
	binding := &rbacv1.ClusterRoleBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRoleBinding"},
		ObjectMeta: meta,
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: r.names.ControllerAccount, Namespace: r.in.Gateway.Namespace}},
	}
	return role, binding
}
