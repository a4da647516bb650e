// Package env is what translation rules read of a snapshot besides the
// object they translate: Services, ReferenceGrants, namespaces, Secrets,
// ConfigMaps and evaluated policies, by key.
//
// Rules read only through an Env, and an Env records every read as a Dep
// in the Reads it was made with. The incremental engine keeps a rule's
// result while none of its Deps changes (Changed), so what a rule reads
// must never go unrecorded. The Index behind an Env keeps its maps
// unexported and has no accessor that does not record: a read that is not
// recorded cannot be written, rather than being found later by a fuzzer.
package env

import (
	"slices"

	contourv1 "github.com/projectcontour/contour/apis/projectcontour/v1"
	contourv1alpha1 "github.com/projectcontour/contour/apis/projectcontour/v1alpha1"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/types"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	gatewayxv1alpha1 "sigs.k8s.io/gateway-api/apisx/v1alpha1"

	"isobar.dev/api/refgrant"
)

// Kind is the kind of thing a Dep names.
type Kind uint8

const (
	// Service is a Service, by namespace and name, with the
	// XBackendTrafficPolicy evaluation that applies to it: most rules
	// that read one read the other, and one Dep for both keeps their
	// reads small.
	Service Kind = iota
	// Grants are the ReferenceGrants of a namespace.
	Grants
	// BackendTLS is the BackendTLSPolicy evaluation of a Service's ports.
	BackendTLS
	// Namespace is a namespace's labels.
	Namespace
	// Secret is a Secret, by namespace and name.
	Secret
	// ConfigMap is a ConfigMap, by namespace and name.
	ConfigMap
	// RouteKinds is the set of route kinds the cluster does not serve.
	RouteKinds
	// HTTPProxy is an HTTPProxy, by namespace and name: a proxy reads the
	// proxies it includes.
	HTTPProxy
	// Delegations are the TLSCertificateDelegations of a namespace.
	Delegations
	// ExtensionService is an ExtensionService, by namespace and name: a
	// proxy reads the one it authorizes with.
	ExtensionService
	// XBackend is an XBackend, by namespace and name: a rule reads the
	// ones its backendRefs name.
	XBackend
)

func (k Kind) String() string {
	switch k {
	case Service:
		return "Service"
	case Grants:
		return "ReferenceGrants"
	case BackendTLS:
		return "BackendTLSPolicy"
	case Namespace:
		return "Namespace"
	case Secret:
		return "Secret"
	case ConfigMap:
		return "ConfigMap"
	case RouteKinds:
		return "RouteKinds"
	case HTTPProxy:
		return "HTTPProxy"
	case Delegations:
		return "TLSCertificateDelegations"
	case ExtensionService:
		return "ExtensionService"
	case XBackend:
		return "XBackend"
	}
	return "Kind(?)"
}

// A Dep is one thing a rule read: a kind and a key (for Grants and
// Namespace the namespace alone, for RouteKinds nothing).
type Dep struct {
	Kind Kind
	Key  types.NamespacedName
}

func (d Dep) String() string { return d.Kind.String() + " " + d.Key.String() }

// Reads are the Deps an Env recorded, each once. The zero value records
// nothing yet.
type Reads struct{ deps []Dep }

// Deps returns the recorded Deps in the order first read. The slice is the
// Reads' own: callers must not change it.
func (r *Reads) Deps() []Dep {
	if r == nil {
		return nil
	}
	return r.deps
}

// Merge records what o recorded.
func (r *Reads) Merge(o *Reads) {
	for _, d := range o.Deps() {
		r.add(d)
	}
}

// AnyIn reports whether one of the recorded Deps is in changed.
func (r *Reads) AnyIn(changed map[Dep]bool) bool {
	return len(changed) > 0 && slices.ContainsFunc(r.Deps(), func(d Dep) bool { return changed[d] })
}

func (r *Reads) add(d Dep) {
	if !slices.Contains(r.deps, d) {
		r.deps = append(r.deps, d)
	}
}

// An Env reads an Index and records each read in its Reads.
type Env struct {
	idx   *Index
	reads *Reads
}

// Env returns an Env over idx that records in r.
func (idx *Index) Env(r *Reads) Env { return Env{idx: idx, reads: r} }

func (e Env) read(kind Kind, ns, name string) {
	e.reads.add(Dep{Kind: kind, Key: types.NamespacedName{Namespace: ns, Name: name}})
}

// Service returns a Service and whether it exists.
func (e Env) Service(ns, name string) (*corev1.Service, bool) {
	e.read(Service, ns, name)
	s, ok := e.idx.services[key(ns, name)]
	return s, ok
}

// ServicePort returns the number of a Service's named port, and whether
// the Service has that port.
func (e Env) ServicePort(ns, name, port string) (int32, bool) {
	s, ok := e.Service(ns, name)
	if !ok {
		return 0, false
	}
	for _, p := range s.Spec.Ports {
		if p.Name == port {
			return p.Port, true
		}
	}
	return 0, false
}

// Granted reports whether a ReferenceGrant in toNamespace lets from refer
// to to; for an HTTPProxy's reference to a Secret, whether a
// TLSCertificateDelegation there does, as Contour has it; for an
// Ingress's, whether either does (refgrant.IngressDelegated).
func (e Env) Granted(from refgrant.From, toNamespace string, to refgrant.To) bool {
	if from.Group == contourv1.GroupName && to.Group == "" && to.Kind == "Secret" {
		e.read(Delegations, toNamespace, "")
		return refgrant.Delegated(e.idx.delegations[toNamespace], toNamespace, to.Name, from.Namespace)
	}
	if from.Group == networkingv1.GroupName && from.Kind == "Ingress" && to.Group == "" && to.Kind == "Secret" {
		e.read(Delegations, toNamespace, "")
		e.read(Grants, toNamespace, "")
		return refgrant.IngressDelegated(e.idx.delegations[toNamespace], e.idx.grants[toNamespace], toNamespace, to.Name, from.Namespace)
	}
	e.read(Grants, toNamespace, "")
	for _, g := range e.idx.grants[toNamespace] {
		if refgrant.Allows(g, from, to) {
			return true
		}
	}
	return false
}

// NamespaceLabels returns a namespace's labels and whether it exists.
func (e Env) NamespaceLabels(name string) (map[string]string, bool) {
	e.read(Namespace, name, "")
	ns, ok := e.idx.namespaces[name]
	if !ok {
		return nil, false
	}
	return ns.Labels, true
}

// Secret returns a Secret and whether it exists.
func (e Env) Secret(ns, name string) (*corev1.Secret, bool) {
	e.read(Secret, ns, name)
	s, ok := e.idx.secrets[key(ns, name)]
	return s, ok
}

// ConfigMap returns a ConfigMap and whether it exists.
func (e Env) ConfigMap(ns, name string) (*corev1.ConfigMap, bool) {
	e.read(ConfigMap, ns, name)
	c, ok := e.idx.configMaps[key(ns, name)]
	return c, ok
}

// Unserved reports whether the cluster does not serve a route kind (its
// CRD is not installed).
func (e Env) Unserved(kind gatewayv1.Kind) bool {
	e.read(RouteKinds, "", "")
	return e.idx.unserved[kind]
}

// UnservedKinds names the route kinds the cluster does not serve, in a
// string that is equal for equal sets.
func (e Env) UnservedKinds() string {
	e.read(RouteKinds, "", "")
	return e.idx.unservedKinds
}

// BackendTLS returns the evaluated policy that applies to a Service port:
// the one naming the port before the one for the whole Service; nil when
// none does.
func (e Env) BackendTLS(svc types.NamespacedName, port string) Evaluated {
	e.read(BackendTLS, svc.Namespace, svc.Name)
	if p, ok := e.idx.backendTLS[PolicyKey{Service: svc, Port: port}]; ok && port != "" {
		return p
	}
	return e.idx.backendTLS[PolicyKey{Service: svc}]
}

// BackendTraffic returns the evaluated XBackendTrafficPolicy that applies
// to a Service; nil when none does. It records the Service's Dep.
func (e Env) BackendTraffic(svc types.NamespacedName) Evaluated {
	e.read(Service, svc.Namespace, svc.Name)
	return e.idx.traffic[svc]
}

// HTTPProxy returns an HTTPProxy and whether it exists.
func (e Env) HTTPProxy(ns, name string) (*contourv1.HTTPProxy, bool) {
	e.read(HTTPProxy, ns, name)
	p, ok := e.idx.proxies[key(ns, name)]
	return p, ok
}

// ExtensionService returns an ExtensionService and whether it exists.
func (e Env) ExtensionService(ns, name string) (*contourv1alpha1.ExtensionService, bool) {
	e.read(ExtensionService, ns, name)
	x, ok := e.idx.extensions[key(ns, name)]
	return x, ok
}

// XBackend returns an XBackend and whether it exists.
func (e Env) XBackend(ns, name string) (*gatewayxv1alpha1.XBackend, bool) {
	e.read(XBackend, ns, name)
	b, ok := e.idx.backends[key(ns, name)]
	return b, ok
}

func key(ns, name string) types.NamespacedName {
	return types.NamespacedName{Namespace: ns, Name: name}
}
