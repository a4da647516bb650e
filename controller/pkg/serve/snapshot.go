package serve

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	gatewayv1alpha2 "sigs.k8s.io/gateway-api/apis/v1alpha2"
	gatewayv1beta1 "sigs.k8s.io/gateway-api/apis/v1beta1"

	"isobar.dev/controller/pkg/resources"
)

// snapshotter lists everything the translator reads from the informer
// cache. It hands the translator the same pointer for an object as long as
// the object is unchanged (same UID and resourceVersion): the translator's
// caches recognise unchanged objects by pointer.
type snapshotter struct {
	c     client.Reader
	known map[types.UID]interned
}

type interned struct {
	resourceVersion string
	obj             any
}

func (s *snapshotter) snapshot(ctx context.Context) (*resources.Resources, error) {
	r := &resources.Resources{}
	next := make(map[types.UID]interned, len(s.known))
	var err error
	list := func(l client.ObjectList) bool {
		if err != nil {
			return false
		}
		// The translator never modifies what it reads, so the cache's
		// objects are shared rather than deep-copied on every pass.
		if e := s.c.List(ctx, l, client.UnsafeDisableDeepCopy); e != nil {
			err = fmt.Errorf("listing %T: %w", l, e)
			return false
		}
		return true
	}
	if l := (&gatewayv1.GatewayClassList{}); list(l) {
		r.GatewayClasses = intern(s.known, next, l.Items)
	}
	if l := (&gatewayv1.GatewayList{}); list(l) {
		r.Gateways = intern(s.known, next, l.Items)
	}
	if l := (&gatewayv1.HTTPRouteList{}); list(l) {
		r.HTTPRoutes = intern(s.known, next, l.Items)
	}
	if l := (&gatewayv1.GRPCRouteList{}); list(l) {
		r.GRPCRoutes = intern(s.known, next, l.Items)
	}
	if l := (&gatewayv1.TLSRouteList{}); list(l) {
		r.TLSRoutes = intern(s.known, next, l.Items)
	}
	if l := (&gatewayv1alpha2.TCPRouteList{}); list(l) {
		r.TCPRoutes = intern(s.known, next, l.Items)
	}
	if l := (&gatewayv1alpha2.UDPRouteList{}); list(l) {
		r.UDPRoutes = intern(s.known, next, l.Items)
	}
	if l := (&gatewayv1beta1.ReferenceGrantList{}); list(l) {
		r.ReferenceGrants = intern(s.known, next, l.Items)
	}
	if l := (&gatewayv1.BackendTLSPolicyList{}); list(l) {
		r.BackendTLSPolicies = intern(s.known, next, l.Items)
	}
	if l := (&corev1.ServiceList{}); list(l) {
		r.Services = intern(s.known, next, l.Items)
	}
	if l := (&discoveryv1.EndpointSliceList{}); list(l) {
		r.EndpointSlices = intern(s.known, next, l.Items)
	}
	if l := (&corev1.SecretList{}); list(l) {
		r.Secrets = intern(s.known, next, l.Items)
	}
	if l := (&corev1.ConfigMapList{}); list(l) {
		r.ConfigMaps = intern(s.known, next, l.Items)
	}
	if l := (&corev1.NamespaceList{}); list(l) {
		r.Namespaces = intern(s.known, next, l.Items)
	}
	if err != nil {
		return nil, err
	}
	s.known = next
	return r, nil
}

// intern returns pointers to items, reusing the pointer of an earlier
// snapshot for an object whose resourceVersion is unchanged.
func intern[T any, PT interface {
	*T
	metav1.Object
}](known, next map[types.UID]interned, items []T) []*T {
	out := make([]*T, len(items))
	for i := range items {
		p := PT(&items[i])
		uid, rv := p.GetUID(), p.GetResourceVersion()
		if old, ok := known[uid]; ok && uid != "" && old.resourceVersion == rv {
			if same, ok := old.obj.(*T); ok {
				out[i] = same
				next[uid] = old
				continue
			}
		}
		out[i] = &items[i]
		if uid != "" {
			next[uid] = interned{resourceVersion: rv, obj: out[i]}
		}
	}
	return out
}
