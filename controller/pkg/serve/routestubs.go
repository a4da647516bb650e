package serve

import (
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"isobar.dev/controller/pkg/unserved"
)

// routeStubs keeps in the cache, of a route whose parentRefs name neither
// the served Gateway nor a ListenerSet and that does not ask for the
// default Gateways (which the served Gateway may become), only a stub: its name, identity and
// versions, without spec, labels, annotations or status. Many Gateways
// share a cluster, and a controller would otherwise hold every route of
// every Gateway (at 50 Gateways of 200 routes each, whole routes were
// most of each controller's heap). A route whose parentRefs change to name
// the Gateway arrives whole in the update. A stub has no parentRefs, which
// is how the status writer knows to read the route from the API server
// when it removes entries we wrote before the route left.
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
		spec, ok := routeSpec(o)
		if !ok || spec.defaulted || mayAttach(spec.parentRefs, o.GetNamespace(), gw) {
			return obj, nil
		}
		if _, done := o.GetAnnotations()[stubParents]; done && spec.isStub() {
			return obj, nil // a stub already: the informer may transform an object twice
		}
		parents := unserved.ParentsOf(o.GetNamespace(), spec.parentRefs, spec.defaulted)
		stubRoute(o)
		kept := notOnlyGateways
		if !parents.Other {
			names := make([]string, len(parents.Gateways))
			for i, p := range parents.Gateways {
				names[i] = p.String()
			}
			kept = strings.Join(names, ",")
		}
		o.SetAnnotations(map[string]string{stubParents: kept})
		return obj, nil
	}
}

// stubParents annotates a stub with the Gateways its route's parentRefs
// named, or notOnlyGateways when one named something else: the controller
// that reports what no Gateway serves tells from it a route whose Gateways
// do not exist without holding every route whole, and a stub transformed
// again from a route it cannot tell from. It is set in the cache only,
// never written.
const (
	stubParents     = "isobar.dev/stub-parents"
	notOnlyGateways = "-"
)

// routeParents are the parents of a cached route, whole or a stub; false
// when they are not known (a stub whose route named something else than a
// Gateway).
func routeParents(o client.Object) (unserved.Parents, bool) {
	spec, ok := routeSpec(o)
	if !ok {
		return unserved.Parents{}, false
	}
	if !spec.isStub() {
		return unserved.ParentsOf(o.GetNamespace(), spec.parentRefs, spec.defaulted), true
	}
	v, ok := o.GetAnnotations()[stubParents]
	if !ok || v == notOnlyGateways {
		return unserved.Parents{}, false
	}
	var p unserved.Parents
	for _, name := range strings.Split(v, ",") {
		if ns, n, ok := strings.Cut(name, "/"); ok {
			p.Gateways = append(p.Gateways, types.NamespacedName{Namespace: ns, Name: n})
		}
	}
	return p, true
}

// stubMeta is the metadata a stub keeps: enough for the informer and for
// events, nothing translation reads.
func stubMeta(m metav1.ObjectMeta) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name: m.Name, Namespace: m.Namespace, UID: m.UID, ResourceVersion: m.ResourceVersion,
		Generation: m.Generation, CreationTimestamp: m.CreationTimestamp, DeletionTimestamp: m.DeletionTimestamp,
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

// routeParts is a route's parentRefs and whether it asks for the default
// Gateways. It is read for every route on every pass (routeParents), so
// it is a value, with nothing to allocate.
type routeParts struct {
	parentRefs []gatewayv1.ParentReference
	defaulted  bool
}

// isStub reports whether the route is kept as a stub (or attaches
// nowhere, which a stub cannot be told from).
func (p routeParts) isStub() bool { return len(p.parentRefs) == 0 && !p.defaulted }

// routeSpec is the routeParts of a route of any kind; false for an object
// that is not a route.
func routeSpec(o client.Object) (routeParts, bool) {
	switch r := o.(type) {
	case *gatewayv1.HTTPRoute:
		return routeParts{r.Spec.ParentRefs, r.Spec.UseDefaultGateways == gatewayv1.GatewayDefaultScopeAll}, true
	case *gatewayv1.GRPCRoute:
		return routeParts{r.Spec.ParentRefs, r.Spec.UseDefaultGateways == gatewayv1.GatewayDefaultScopeAll}, true
	case *gatewayv1.TLSRoute:
		return routeParts{r.Spec.ParentRefs, r.Spec.UseDefaultGateways == gatewayv1.GatewayDefaultScopeAll}, true
	case *gatewayv1.TCPRoute:
		return routeParts{r.Spec.ParentRefs, r.Spec.UseDefaultGateways == gatewayv1.GatewayDefaultScopeAll}, true
	case *gatewayv1.UDPRoute:
		return routeParts{r.Spec.ParentRefs, r.Spec.UseDefaultGateways == gatewayv1.GatewayDefaultScopeAll}, true
	}
	return routeParts{}, false
}

// stubRoute makes a route a stub: its kind and stubMeta, nothing else.
func stubRoute(o client.Object) {
	switch r := o.(type) {
	case *gatewayv1.HTTPRoute:
		*r = gatewayv1.HTTPRoute{TypeMeta: r.TypeMeta, ObjectMeta: stubMeta(r.ObjectMeta)}
	case *gatewayv1.GRPCRoute:
		*r = gatewayv1.GRPCRoute{TypeMeta: r.TypeMeta, ObjectMeta: stubMeta(r.ObjectMeta)}
	case *gatewayv1.TLSRoute:
		*r = gatewayv1.TLSRoute{TypeMeta: r.TypeMeta, ObjectMeta: stubMeta(r.ObjectMeta)}
	case *gatewayv1.TCPRoute:
		*r = gatewayv1.TCPRoute{TypeMeta: r.TypeMeta, ObjectMeta: stubMeta(r.ObjectMeta)}
	case *gatewayv1.UDPRoute:
		*r = gatewayv1.UDPRoute{TypeMeta: r.TypeMeta, ObjectMeta: stubMeta(r.ObjectMeta)}
	}
}
