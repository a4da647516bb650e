package gatewayapi

import (
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/types"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	gatewayv1beta1 "sigs.k8s.io/gateway-api/apis/v1beta1"

	"isobar.dev/api/refgrant"
	"isobar.dev/controller/pkg/resources"
)

// index looks objects up by key; built once per translation, in linear time.
type index struct {
	classes    map[string]*gatewayv1.GatewayClass
	services   map[types.NamespacedName]*corev1.Service
	slices     map[types.NamespacedName][]*discoveryv1.EndpointSlice // by Service
	secrets    map[types.NamespacedName]*corev1.Secret
	namespaces map[string]*corev1.Namespace
	grants     map[string][]*gatewayv1beta1.ReferenceGrant // by namespace
	configMaps map[types.NamespacedName]*corev1.ConfigMap
	backendTLS map[backendTLSKey]*backendTLS
	// unserved are the route kinds the cluster does not serve.
	unserved map[gatewayv1.Kind]bool
	// unservedKinds lists the unserved kinds, which decide what listeners
	// accept.
	unservedKinds string
}

func newIndex(res *resources.Resources) *index {
	idx := &index{
		classes:    make(map[string]*gatewayv1.GatewayClass, len(res.GatewayClasses)),
		services:   make(map[types.NamespacedName]*corev1.Service, len(res.Services)),
		slices:     make(map[types.NamespacedName][]*discoveryv1.EndpointSlice, len(res.EndpointSlices)),
		secrets:    make(map[types.NamespacedName]*corev1.Secret, len(res.Secrets)),
		namespaces: make(map[string]*corev1.Namespace, len(res.Namespaces)),
		grants:     map[string][]*gatewayv1beta1.ReferenceGrant{},
		configMaps: make(map[types.NamespacedName]*corev1.ConfigMap, len(res.ConfigMaps)),
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
	idx.backendTLS = indexBackendTLS(res, idx)
	idx.unservedKinds = fmt.Sprint(slices.Sorted(maps.Keys(idx.unserved)))
	return idx
}

// namespaceLabels returns a namespace's labels and whether it exists.
func (idx *index) namespaceLabels(name string) (map[string]string, bool) {
	ns, ok := idx.namespaces[name]
	if !ok {
		return nil, false
	}
	return ns.Labels, true
}

func key(ns, name string) types.NamespacedName {
	return types.NamespacedName{Namespace: ns, Name: name}
}

// granted reports whether a ReferenceGrant in toNamespace lets objects of
// fromGroup/fromKind in fromNamespace refer to toGroup/toKind named toName.
func (idx *index) granted(fromGroup, fromKind, fromNamespace, toGroup, toKind, toNamespace, toName string) bool {
	for _, g := range idx.grants[toNamespace] {
		if refgrant.Allows(g, refgrant.From{Group: fromGroup, Kind: fromKind, Namespace: fromNamespace}, refgrant.To{Group: toGroup, Kind: toKind, Name: toName}) {
			return true
		}
	}
	return false
}
