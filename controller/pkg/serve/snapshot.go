package serve

import (
	"context"
	"fmt"

	contourv1 "github.com/projectcontour/contour/apis/projectcontour/v1"
	contourv1alpha1 "github.com/projectcontour/contour/apis/projectcontour/v1alpha1"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	gatewayv1beta1 "sigs.k8s.io/gateway-api/apis/v1beta1"
	gatewayxv1alpha1 "sigs.k8s.io/gateway-api/apisx/v1alpha1"

	"isobar.dev/controller/pkg/resources"
)

// snapshotter lists everything the translator reads but Secrets,
// ConfigMaps and EndpointSlices (the reconciler's own watches add those),
// straight from the
// informers' stores: the cached objects themselves, without a copy.
// Informers replace an object when it changes, so an unchanged object keeps
// its pointer from one snapshot to the next, which is how the translator
// recognises it.
type snapshotter struct {
	informers cache.Informers
	// served are the optional kinds the cluster serves: the others have
	// no informer, and no objects.
	served kindSet
}

func (s *snapshotter) snapshot(ctx context.Context) (*resources.Resources, error) {
	l := &lister{ctx: ctx, informers: s.informers, served: s.served}
	r := &resources.Resources{
		GatewayClasses:            list[gatewayv1.GatewayClass](l),
		Gateways:                  list[gatewayv1.Gateway](l),
		HTTPRoutes:                list[gatewayv1.HTTPRoute](l),
		GRPCRoutes:                list[gatewayv1.GRPCRoute](l),
		TLSRoutes:                 list[gatewayv1.TLSRoute](l),
		TCPRoutes:                 list[gatewayv1.TCPRoute](l),
		UDPRoutes:                 list[gatewayv1.UDPRoute](l),
		ListenerSets:              list[gatewayv1.ListenerSet](l),
		Ingresses:                 list[networkingv1.Ingress](l),
		IngressClasses:            list[networkingv1.IngressClass](l),
		ReferenceGrants:           list[gatewayv1beta1.ReferenceGrant](l),
		BackendTLSPolicies:        list[gatewayv1.BackendTLSPolicy](l),
		BackendTrafficPolicies:    list[gatewayxv1alpha1.XBackendTrafficPolicy](l),
		Backends:                  list[gatewayxv1alpha1.XBackend](l),
		Services:                  list[corev1.Service](l),
		Namespaces:                list[corev1.Namespace](l),
		HTTPProxies:               list[contourv1.HTTPProxy](l),
		TLSCertificateDelegations: list[contourv1.TLSCertificateDelegation](l),
		ExtensionServices:         list[contourv1alpha1.ExtensionService](l),
		Unserved:                  s.served.unserved(),
	}
	if l.err != nil {
		return nil, l.err
	}
	return r, nil
}

// lister is one snapshot's listing; the first error stops it.
type lister struct {
	ctx       context.Context
	informers cache.Informers
	served    kindSet
	err       error
}

// list returns the cached objects of one type. The translator never
// modifies what it reads.
func list[T any, PT interface {
	*T
	client.Object
}](l *lister) []*T {
	if l.err != nil || !l.served.served(PT(new(T))) {
		return nil
	}
	inf, err := l.informers.GetInformer(l.ctx, PT(new(T)))
	if err != nil {
		l.err = fmt.Errorf("informer of %T: %w", new(T), err)
		return nil
	}
	st, ok := inf.(interface{ GetStore() toolscache.Store })
	if !ok {
		l.err = fmt.Errorf("the informer of %T (a %T) has no store", new(T), inf)
		return nil
	}
	cached := st.GetStore().List()
	out := make([]*T, 0, len(cached))
	for _, o := range cached {
		if p, ok := o.(*T); ok {
			out = append(out, p)
		}
	}
	return out
}
