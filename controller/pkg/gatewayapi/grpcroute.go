package gatewayapi

import (
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"isobar.dev/controller/pkg/env"
	"isobar.dev/controller/pkg/routerule"
)

// attachGRPCRoute attaches a GRPCRoute, whose rules become HTTP routes on
// the same virtual hosts as HTTPRoutes (see routerule.GRPCRoute).
func (t *gatewayTranslator) attachGRPCRoute(gr *gatewayv1.GRPCRoute, rank int32) {
	r := routeOf("GRPCRoute", &gr.ObjectMeta, &gr.Spec.CommonRouteSpec, gr.Spec.Hostnames)
	t.attachRequestRoute(r, rank, func(e env.Env) *routerule.Rules { return routerule.GRPCRoute(e, &t.cache.Names, gr) })
}
