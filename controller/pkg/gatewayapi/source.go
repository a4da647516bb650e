package gatewayapi

import (
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"isobar.dev/controller/pkg/ingress"
)

// A source is the routing API a route comes from. Where routes of two
// sources have the same match on one host, the Gateway API's come first,
// then HTTPProxy's, then Ingress's: Contour's design for multiple
// listeners has Ingress overwritten by HTTPProxy, overwritten by the
// Gateway API. This is the one place that order is decided; precedence
// compares sources before ages.
type source uint8

const (
	fromGatewayAPI source = iota
	fromHTTPProxy
	fromIngress
)

// sourceOf returns the source of a route object: the routes made of an
// Ingress have names no real object can have (ingress.RoutePrefix).
func sourceOf(meta *metav1.ObjectMeta) source {
	if strings.HasPrefix(meta.Name, ingress.RoutePrefix) {
		return fromIngress
	}
	return fromGatewayAPI
}
