package gatewayapi

import (
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"isobar.dev/controller/pkg/ingress"
)

// A source is the routing API a route comes from. Where routes of two
// sources have the same match on one host, the Gateway API's come first,
// then HTTPProxy's, then Ingress's: Contour's design for multiple
// listeners has Ingress overwritten by HTTPProxy, overwritten by the
// Gateway API. This is the one place that order is decided: precedence
// compares sources before ages, and Ingresses are attached after routes.
type source uint8

const (
	fromGatewayAPI source = iota
	fromHTTPProxy
	fromIngress
)

// sourceOf returns the source of an object of a kind.
func sourceOf(kind gatewayv1.Kind) source {
	switch kind {
	case ingress.ParentKind:
		return fromIngress
	case "HTTPProxy":
		return fromHTTPProxy
	}
	return fromGatewayAPI
}
