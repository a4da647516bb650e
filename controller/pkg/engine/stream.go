package engine

import "isobar.dev/controller/pkg/ir"

// stream is where one Envoy filter chain (TLS, by server name) or listener
// (TCP, UDP) forwards connections, and the route that said so.
type stream struct {
	certs []string
	owner string // "namespace/name" of the route
	dest  *ir.Destination
}

// ClaimStream claims server name (TLS; "" for a TCP or UDP listener) of
// the table for a route, to forward its connections to dest; it reports
// false when another route had already claimed it. Routes claim oldest
// first, so the oldest keeps what it forwards.
func (tb *Table) ClaimStream(name, owner string, certs []string, dest *ir.Destination) bool {
	if s, ok := tb.streams[name]; ok && s.owner != owner {
		return false
	}
	tb.streams[name] = &stream{certs: certs, owner: owner, dest: dest}
	return true
}
