package serve

import (
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// routeStubs keeps in the cache, of a route whose parentRefs name neither
// the served Gateway nor a ListenerSet, only its metadata, parentRefs and
// status: many Gateways share a cluster, and a controller would otherwise
// hold every route of every Gateway. A route whose parentRefs change to
// name the Gateway arrives whole in the update; the status stays, so that
// entries we wrote before the route left the Gateway can be removed.
func routeStubs(gw types.NamespacedName) toolscache.TransformFunc {
	strip := cache.TransformStripManagedFields()
	return func(obj any) (any, error) {
		obj, err := strip(obj)
		if err != nil {
			return obj, err
		}
		o, ok := obj.(client.Object)
		if !ok {
			return obj, nil
		}
		spec := routeSpec(o)
		if spec == nil || mayAttach(spec.parentRefs, o.GetNamespace(), gw) {
			return obj, nil
		}
		spec.stub()
		return obj, nil
	}
}

// mayAttach reports whether a route with these parentRefs in namespace ns
// can attach to gw: a parentRef names it, or a ListenerSet (which
// ListenerSets gw takes can change without the route changing).
func mayAttach(refs []gatewayv1.ParentReference, ns string, gw types.NamespacedName) bool {
	for _, ref := range refs {
		if ref.Group != nil && *ref.Group != gatewayv1.GroupName {
			continue
		}
		kind := gatewayv1.Kind("Gateway")
		if ref.Kind != nil {
			kind = *ref.Kind
		}
		if kind == "ListenerSet" {
			return true
		}
		refNS := ns
		if ref.Namespace != nil {
			refNS = string(*ref.Namespace)
		}
		if kind == "Gateway" && refNS == gw.Namespace && string(ref.Name) == gw.Name {
			return true
		}
	}
	return false
}

// routeParts is a route's parentRefs and how to empty the rest of its
// spec.
type routeParts struct {
	parentRefs []gatewayv1.ParentReference
	stub       func()
}

func routeSpec(o client.Object) *routeParts {
	switch r := o.(type) {
	case *gatewayv1.HTTPRoute:
		return &routeParts{r.Spec.ParentRefs, func() { r.Spec = gatewayv1.HTTPRouteSpec{CommonRouteSpec: r.Spec.CommonRouteSpec} }}
	case *gatewayv1.GRPCRoute:
		return &routeParts{r.Spec.ParentRefs, func() { r.Spec = gatewayv1.GRPCRouteSpec{CommonRouteSpec: r.Spec.CommonRouteSpec} }}
	case *gatewayv1.TLSRoute:
		return &routeParts{r.Spec.ParentRefs, func() { r.Spec = gatewayv1.TLSRouteSpec{CommonRouteSpec: r.Spec.CommonRouteSpec} }}
	case *gatewayv1.TCPRoute:
		return &routeParts{r.Spec.ParentRefs, func() { r.Spec = gatewayv1.TCPRouteSpec{CommonRouteSpec: r.Spec.CommonRouteSpec} }}
	case *gatewayv1.UDPRoute:
		return &routeParts{r.Spec.ParentRefs, func() { r.Spec = gatewayv1.UDPRouteSpec{CommonRouteSpec: r.Spec.CommonRouteSpec} }}
	}
	return nil
}
