package gatewayapi

import (
	"cmp"
	"fmt"
	"slices"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"isobar.dev/api/ingressclass"
	"isobar.dev/controller/pkg/env"
	"isobar.dev/controller/pkg/ingress"
	"isobar.dev/controller/pkg/resources"
)

// IngressStatus is what the controller serving a Gateway reports on an
// Ingress it serves: the load balancer status comes from the Gateway's
// addresses, and Problems become Events (an Ingress has no conditions).
type IngressStatus struct {
	Gateway types.NamespacedName
	// Served says the Gateway has the listeners Ingress needs, so that
	// the Ingress gets the Gateway's addresses.
	Served   bool
	Problems []string
}

// ingressKey is what an Ingress's conversion depends on besides the
// Services whose named ports it read: the Ingress and the Gateway's shape.
type ingressKey struct {
	ing                 *networkingv1.Ingress
	gw                  types.NamespacedName
	httpPort, httpsPort gatewayv1.PortNumber
}

// convertedIngress is a conversion and the Services it read.
type convertedIngress struct {
	ingress.Converted
	reads env.Reads
}

// ingressSets converts the Ingresses the Gateway serves: their TLS hosts
// become listener sets of the Gateway, allowed whatever its
// allowedListeners (they are the Gateway's own Ingress listeners), and
// their rules HTTPRoutes. A conversion is reused while its key holds and
// the Services it read did not change, so
// that an unchanged Ingress's routes are the same objects, which the
// outcome cache recognises.
func (t *gatewayTranslator) ingressSets(res *resources.Resources) ([]*listenerSet, []*gatewayv1.HTTPRoute) {
	selected := ingressclass.Selected(t.gw, string(t.controller), res.IngressClasses, res.Ingresses)
	if len(selected) == 0 {
		return nil, nil
	}
	gwName := types.NamespacedName{Namespace: t.gw.Namespace, Name: t.gw.Name}
	shape, err := ingress.ShapeOf(t.gw)
	if err != nil {
		for _, ing := range selected {
			t.status.Ingresses[key(ing.Namespace, ing.Name)] = &IngressStatus{Gateway: gwName, Problems: []string{err.Error()}}
		}
		return nil, nil
	}
	t.ingressShape = true
	var sets []*listenerSet
	var routes []*gatewayv1.HTTPRoute
	for _, ing := range selected {
		k := ingressKey{ing: ing, gw: gwName, httpPort: shape.HTTP.Port}
		if shape.HTTPS != nil {
			k.httpsPort = shape.HTTPS.Port
		}
		c, ok := t.cache.ingresses[k]
		if !ok || c.reads.AnyIn(t.cache.changed) {
			c = t.convertIngress(ing, shape)
		}
		t.cache.usedIngresses[k] = c
		t.status.Ingresses[key(ing.Namespace, ing.Name)] = &IngressStatus{Gateway: gwName, Served: true, Problems: slices.Clone(c.Problems)}
		routes = append(routes, c.Routes...)
		if len(c.Listeners) > 0 {
			obj := &gatewayv1.ListenerSet{ObjectMeta: metav1.ObjectMeta{Namespace: ing.Namespace, Name: ing.Name, UID: ing.UID, Generation: ing.Generation}}
			obj.Spec.Listeners = c.Listeners
			sets = append(sets, &listenerSet{obj: obj, ingress: ing})
		}
	}
	return sets, routes
}

// convertIngress converts an Ingress, recording the Services it reads.
func (t *gatewayTranslator) convertIngress(ing *networkingv1.Ingress, shape ingress.Shape) convertedIngress {
	var out convertedIngress
	out.Converted = ingress.Convert(ing, t.gw, shape, t.newEnv(&out.reads).ServicePort)
	return out
}

// reportIngresses moves what translation reported on the Ingresses' routes
// and listeners into their problems: those objects exist only here. The
// routes are those of the conversions, not every route with an Ingress
// route's name: the translation of 100,000 routes and no Ingress should
// not look at each.
func (st *Status) reportIngresses(conversions map[ingressKey]convertedIngress) {
	var keys []RouteKey
	for _, c := range conversions {
		for _, r := range c.Routes {
			k := routeKey("HTTPRoute", &r.ObjectMeta)
			if _, ok := st.Routes[k]; ok {
				keys = append(keys, k)
			}
		}
	}
	// In route order, so that the problems' order is the same however
	// the map lists them.
	slices.SortFunc(keys, func(a, b RouteKey) int { return cmp.Compare(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name) })
	keys = slices.Compact(keys)
	for _, k := range keys {
		name, _ := ingress.Of(k.Namespace, k.Name)
		parents := st.Routes[k]
		delete(st.Routes, k)
		is := st.Ingresses[name]
		if is == nil {
			continue
		}
		for _, p := range parents {
			for _, c := range p.Conditions {
				if c.Status == metav1.ConditionFalse && (c.Type == string(gatewayv1.RouteConditionAccepted) || c.Type == string(gatewayv1.RouteConditionResolvedRefs)) {
					is.problem(c.Message)
				}
			}
		}
	}
}

func (is *IngressStatus) problem(msg string) {
	if !slices.Contains(is.Problems, msg) {
		is.Problems = append(is.Problems, msg)
	}
}

// ingressListenerProblems reports an Ingress's TLS listeners that cannot
// be served (a hostname the Gateway's listener serves, a missing
// certificate).
func (t *gatewayTranslator) ingressListenerProblems(s *listenerSet) {
	is := t.status.Ingresses[key(s.ingress.Namespace, s.ingress.Name)]
	if is == nil {
		return
	}
	for _, l := range s.listeners {
		for _, c := range l.conds.Items {
			bad := c.Type == string(gatewayv1.ListenerConditionConflicted) && c.Status == metav1.ConditionTrue ||
				(c.Type == string(gatewayv1.ListenerConditionAccepted) || c.Type == string(gatewayv1.ListenerConditionResolvedRefs)) && c.Status == metav1.ConditionFalse
			if bad {
				is.problem(fmt.Sprintf("TLS host %s: %s", l.hostname, c.Message))
			}
		}
	}
}
