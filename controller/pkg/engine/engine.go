// Package engine keeps what the routes attached to one Gateway add up to,
// from one snapshot to the next: each route's outcome, what it read, the
// virtual hosts and streams of every port, and the clusters in use. A
// route that changes is a subtraction and an addition, not a translation
// of every route. The processors (the Gateway API's attachment, Ingress,
// HTTPProxy) decide what an object's outcome is; the engine applies it,
// takes it back, orders routes on a host and builds the IR listeners.
//
// Like the processors it is pure: no Kubernetes client, no goroutines.
package engine

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// A Source is the routing API a route comes from. Where routes of two
// sources have the same match on one host, the Gateway API's come first,
// then HTTPProxy's, then Ingress's: Contour's design for multiple
// listeners has Ingress overwritten by HTTPProxy, overwritten by the
// Gateway API. This is the one place that order is decided: precedence
// compares sources before ages, and the processors attach in this order.
type Source uint8

const (
	FromGatewayAPI Source = iota
	FromHTTPProxy
	FromIngress
)

// RouteKey names a route of any kind.
type RouteKey struct {
	Kind      string // HTTPRoute, TLSRoute, TCPRoute, UDPRoute, HTTPProxy
	Namespace string
	Name      string
}

// KeyOf returns the key of a route object of a kind.
func KeyOf(kind string, meta *metav1.ObjectMeta) RouteKey {
	return RouteKey{Kind: kind, Namespace: meta.Namespace, Name: meta.Name}
}

// A Family groups protocols that can share an Envoy listener: HTTPS and
// TLS (filter chains by server name), HTTP, TCP and UDP.
type Family int

const (
	FamilyNone Family = iota
	FamilyHTTP
	FamilyTLS
	FamilyTCP
	FamilyUDP
)

// TableKey is a table's port and transport: a UDP listener shares its
// port number with no other protocol's, as Envoy binds them apart.
type TableKey struct {
	Port gatewayv1.PortNumber
	UDP  bool
}

// A Listener is where an outcome's additions go: a Gateway listener (or a
// ListenerSet's), as the table of its port and the certificates its
// virtual hosts and streams are served with.
type Listener struct {
	Key           TableKey
	Family        Family
	ContainerPort int32
	// HTTPS says the listener terminates TLS for HTTP: its port's
	// table has a filter chain per HTTPS listener.
	HTTPS        bool
	Certificates []string
}
