package gatewayapi

import (
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"isobar.dev/controller/pkg/engine"
	"isobar.dev/controller/pkg/ingress"
)

// sourceOf returns the routing API an object of a kind comes from, which
// orders it among routes of the same match on a host (see engine.Source).
func sourceOf(kind gatewayv1.Kind) engine.Source {
	switch kind {
	case ingress.ParentKind:
		return engine.FromIngress
	case "HTTPProxy":
		return engine.FromHTTPProxy
	}
	return engine.FromGatewayAPI
}
