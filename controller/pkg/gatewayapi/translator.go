// Package gatewayapi is the first translation stage: Gateway API resources in,
// the IR of each Gateway and the status of every object out. It is pure: no
// Kubernetes client, no goroutines, no clock; the same input always gives the
// same output, so the controller, `isobar-controller translate` and the golden
// tests share it.
//
// The order of work follows the Gateway API: validate each Gateway's
// listeners (ports, protocols, conflicts, certificates), attach routes to
// listeners (parentRefs, allowedRoutes, hostnames), translate the accepted
// rules in precedence order, and resolve backends (with ReferenceGrants).
package gatewayapi

import (
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/types"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"isobar.dev/controller/pkg/ir"
	"isobar.dev/controller/pkg/resources"
)

// Options select what to translate.
type Options struct {
	// ControllerName is the GatewayClass controllerName Isobar serves.
	ControllerName gatewayv1.GatewayController
	// Gateways limits translation to these Gateways; empty means every
	// Gateway whose class has ControllerName.
	Gateways []types.NamespacedName
}

// Result is the output of a translation.
type Result struct {
	// Gateways holds the IR of each translated Gateway, ordered by name.
	Gateways []*ir.Gateway
	// Status holds what the controller would write.
	Status *Status
}

// Translate translates res. It never fails: what cannot be translated is
// reported in the status of the object at fault, and the rest is translated.
func Translate(res *resources.Resources, opts Options) *Result {
	idx := newIndex(res)
	st := newStatus()
	out := &Result{Status: st}
	streams := streamRoutes(res)
	for _, gw := range selectGateways(res, idx, opts) {
		t := &gatewayTranslator{idx: idx, status: st, gw: gw, controller: opts.ControllerName, streams: streams}
		out.Gateways = append(out.Gateways, t.translate(res))
	}
	return out
}

// selectGateways returns the Gateways to translate, ordered by namespace and
// name.
func selectGateways(res *resources.Resources, idx *index, opts Options) []*gatewayv1.Gateway {
	var gws []*gatewayv1.Gateway
	for _, gw := range res.Gateways {
		if len(opts.Gateways) > 0 {
			if slices.Contains(opts.Gateways, types.NamespacedName{Namespace: gw.Namespace, Name: gw.Name}) {
				gws = append(gws, gw)
			}
			continue
		}
		if class, ok := idx.classes[string(gw.Spec.GatewayClassName)]; ok && class.Spec.ControllerName == opts.ControllerName {
			gws = append(gws, gw)
		}
	}
	slices.SortFunc(gws, func(a, b *gatewayv1.Gateway) int {
		return strings.Compare(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name)
	})
	return gws
}

// gatewayTranslator translates one Gateway.
type gatewayTranslator struct {
	idx        *index
	status     *Status
	gw         *gatewayv1.Gateway
	controller gatewayv1.GatewayController

	streams []streamRoute // TLS, TCP and UDP routes, oldest first

	listeners []*listener
	clusters  map[string]*ir.Cluster
	secrets   map[string]*ir.Secret
	// vhosts collects the routes of each (Envoy listener, route table,
	// domain) before they are sorted into precedence order.
	tables map[string]*table
}

func (t *gatewayTranslator) translate(res *resources.Resources) *ir.Gateway {
	t.clusters = map[string]*ir.Cluster{}
	t.secrets = map[string]*ir.Secret{}
	t.tables = map[string]*table{}
	t.listeners = t.validateListeners()
	for _, r := range res.HTTPRoutes {
		t.attachHTTPRoute(r)
	}
	for _, r := range res.GRPCRoutes {
		t.attachGRPCRoute(r)
	}
	for _, r := range t.streams {
		t.attachStreamRoute(r)
	}
	g := t.build()
	t.writeGatewayStatus()
	return g
}
