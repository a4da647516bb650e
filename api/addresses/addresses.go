// Package addresses is the contract between the operator, which puts a
// Gateway's requested addresses (spec.addresses) on its Envoy Service, and
// the controller, which reports whether the Gateway got them: which
// requested addresses are supported, and which of those can be used at all.
package addresses

import (
	"fmt"
	"net/netip"

	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// Requested is one spec.addresses entry as the fleet can honour it.
type Requested struct {
	Index int
	// IP is the address; "" asks for any address (GatewayAddressEmpty),
	// which the Service gets anyway.
	IP string
	// Unusable says why IP can never be the Service's: the API server
	// refuses it as a load balancer or external IP. The Service leaves it
	// out and the Gateway is not programmed (AddressNotUsable).
	Unusable string
}

// Unsupported is an address of a type the fleet's Service cannot take: the
// Gateway is not accepted (UnsupportedAddress).
type Unsupported struct {
	Index int
	Type  gatewayv1.AddressType
}

func (u *Unsupported) Error() string {
	return fmt.Sprintf("spec.addresses[%d]: type %s is not supported; use IPAddress", u.Index, u.Type)
}

// Of reads a Gateway's spec.addresses: IP addresses (the default type), or
// the first address of another type.
func Of(gw *gatewayv1.Gateway) ([]Requested, *Unsupported) {
	var out []Requested
	for i, a := range gw.Spec.Addresses {
		if a.Type != nil && *a.Type != gatewayv1.IPAddressType {
			return nil, &Unsupported{Index: i, Type: *a.Type}
		}
		r := Requested{Index: i, IP: a.Value}
		if a.Value != "" {
			r.Unusable = unusable(a.Value)
		}
		out = append(out, r)
	}
	return out, nil
}

// unusable says why the API server would refuse ip as a Service's
// load balancer or external IP, or "".
func unusable(ip string) string {
	addr, err := netip.ParseAddr(ip)
	switch {
	case err != nil:
		return fmt.Sprintf("%q is not an IP address", ip)
	case addr.Zone() != "":
		return fmt.Sprintf("%s has a zone", ip)
	case addr.IsUnspecified():
		return fmt.Sprintf("%s is the unspecified address", ip)
	case addr.IsLoopback():
		return fmt.Sprintf("%s is a loopback address", ip)
	case addr.IsLinkLocalUnicast(), addr.IsLinkLocalMulticast():
		return fmt.Sprintf("%s is a link-local address", ip)
	case addr.IsMulticast():
		return fmt.Sprintf("%s is a multicast address", ip)
	}
	return ""
}
