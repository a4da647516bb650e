package env

import (
	"fmt"
	"maps"
	"slices"

	contourv1 "github.com/projectcontour/contour/apis/projectcontour/v1"
	contourv1alpha1 "github.com/projectcontour/contour/apis/projectcontour/v1alpha1"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/types"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	gatewayv1beta1 "sigs.k8s.io/gateway-api/apis/v1beta1"
	gatewayxv1alpha1 "sigs.k8s.io/gateway-api/apisx/v1alpha1"

	"isobar.dev/controller/pkg/resources"
)

// Index holds a snapshot's objects by key; built once per translation, in
// linear time. Rules read it through an Env.
type Index struct {
	classes    map[string]*gatewayv1.GatewayClass
	services   map[types.NamespacedName]*corev1.Service
	slices     map[types.NamespacedName][]*discoveryv1.EndpointSlice // by Service
	secrets    map[types.NamespacedName]*corev1.Secret
	namespaces map[string]*corev1.Namespace
	grants     map[string][]*gatewayv1beta1.ReferenceGrant // by namespace
	configMaps map[types.NamespacedName]*corev1.ConfigMap
	proxies    map[types.NamespacedName]*contourv1.HTTPProxy
	// delegations are the TLSCertificateDelegations by namespace.
	delegations map[string][]*contourv1.TLSCertificateDelegation
	extensions  map[types.NamespacedName]*contourv1alpha1.ExtensionService
	backends    map[types.NamespacedName]*gatewayxv1alpha1.XBackend
	backendTLS  map[PolicyKey]Evaluated
	traffic     map[types.NamespacedName]Evaluated
	unserved    map[gatewayv1.Kind]bool
	// unservedKinds lists the unserved kinds.
	unservedKinds string
}

// PolicyKey is what a policy for backends applies to: a Service, and a
// port name ("" for every port).
type PolicyKey struct {
	Service types.NamespacedName
	Port    string
}

// Evaluated is a policy as translation evaluated it for one snapshot.
// Same reports whether rules would read two evaluations alike, which
// decides whether the Dep on it changed.
type Evaluated interface {
	Same(Evaluated) bool
}

// EvaluateFunc evaluates the snapshot's BackendTLSPolicies, reading what
// they refer to through e.
type EvaluateFunc func(e Env) map[PolicyKey]Evaluated

// NewIndex indexes res. evaluate, when not nil, evaluates the
// BackendTLSPolicies once for every rule to read; what it reads is not
// kept, since its result is compared as a whole (Evaluated.Same).
func NewIndex(res *resources.Resources, evaluate EvaluateFunc) *Index {
	idx := &Index{
		classes:    make(map[string]*gatewayv1.GatewayClass, len(res.GatewayClasses)),
		services:   make(map[types.NamespacedName]*corev1.Service, len(res.Services)),
		slices:     make(map[types.NamespacedName][]*discoveryv1.EndpointSlice, len(res.EndpointSlices)),
		secrets:    make(map[types.NamespacedName]*corev1.Secret, len(res.Secrets)),
		namespaces: make(map[string]*corev1.Namespace, len(res.Namespaces)),
		grants:     map[string][]*gatewayv1beta1.ReferenceGrant{},
		configMaps: make(map[types.NamespacedName]*corev1.ConfigMap, len(res.ConfigMaps)),
		proxies:    make(map[types.NamespacedName]*contourv1.HTTPProxy, len(res.HTTPProxies)),
	}
	for _, p := range res.HTTPProxies {
		idx.proxies[key(p.Namespace, p.Name)] = p
	}
	for _, x := range res.ExtensionServices {
		if idx.extensions == nil {
			idx.extensions = map[types.NamespacedName]*contourv1alpha1.ExtensionService{}
		}
		idx.extensions[key(x.Namespace, x.Name)] = x
	}
	for _, b := range res.Backends {
		if idx.backends == nil {
			idx.backends = map[types.NamespacedName]*gatewayxv1alpha1.XBackend{}
		}
		idx.backends[key(b.Namespace, b.Name)] = b
	}
	for _, d := range res.TLSCertificateDelegations {
		if idx.delegations == nil {
			idx.delegations = map[string][]*contourv1.TLSCertificateDelegation{}
		}
		idx.delegations[d.Namespace] = append(idx.delegations[d.Namespace], d)
	}
	for _, c := range res.ConfigMaps {
		idx.configMaps[key(c.Namespace, c.Name)] = c
	}
	for _, c := range res.GatewayClasses {
		idx.classes[c.Name] = c
	}
	for _, s := range res.Services {
		idx.services[key(s.Namespace, s.Name)] = s
	}
	for _, s := range res.EndpointSlices {
		svc := s.Labels[discoveryv1.LabelServiceName]
		if svc == "" {
			continue
		}
		k := key(s.Namespace, svc)
		idx.slices[k] = append(idx.slices[k], s)
	}
	for _, s := range res.Secrets {
		idx.secrets[key(s.Namespace, s.Name)] = s
	}
	for _, n := range res.Namespaces {
		idx.namespaces[n.Name] = n
	}
	for _, g := range res.ReferenceGrants {
		idx.grants[g.Namespace] = append(idx.grants[g.Namespace], g)
	}
	for _, k := range res.Unserved {
		if idx.unserved == nil {
			idx.unserved = map[gatewayv1.Kind]bool{}
		}
		idx.unserved[k] = true
	}
	idx.unservedKinds = fmt.Sprint(slices.Sorted(maps.Keys(idx.unserved)))
	if evaluate != nil {
		var discard Reads
		idx.backendTLS = evaluate(idx.Env(&discard))
	}
	return idx
}

// WithTraffic adds the evaluated XBackendTrafficPolicies, by Service, to
// an index before rules read it.
func (idx *Index) WithTraffic(policies map[types.NamespacedName]Evaluated) *Index {
	idx.traffic = policies
	return idx
}

// Class returns a GatewayClass by name. It records nothing: it is for the
// engine, which selects the Gateways to translate on every translation.
func (idx *Index) Class(name string) (*gatewayv1.GatewayClass, bool) {
	c, ok := idx.classes[name]
	return c, ok
}

// EndpointSlices returns the EndpointSlices of a Service. It records
// nothing: it is for the engine, which builds every cluster from the
// snapshot's endpoints on every translation.
func (idx *Index) EndpointSlices(svc types.NamespacedName) []*discoveryv1.EndpointSlice {
	return idx.slices[svc]
}
