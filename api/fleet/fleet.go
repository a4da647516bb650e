// Package fleet names and labels the objects the operator provisions for a
// Gateway, so that the operator, the controller and the tests agree on them.
//
// Names follow GEP-1762: the base is "<gateway>-<gatewayclass>", and a
// component suffix tells the objects of one fleet apart. Kubernetes limits
// most names and every label value to 63 characters; a name that would be
// longer is cut and given a hash of the full name, so it stays unique and
// stable.
package fleet

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// Labels on everything the operator provisions.
const (
	// LabelGatewayName is the Gateway API's well-known label for the Gateway
	// a provisioned object belongs to.
	LabelGatewayName = "gateway.networking.k8s.io/gateway-name"
	// LabelManagedBy marks objects the operator owns.
	LabelManagedBy = "app.kubernetes.io/managed-by"
	// LabelComponent tells the control plane and the data plane apart.
	LabelComponent = "app.kubernetes.io/component"

	// ManagedBy is the value of LabelManagedBy.
	ManagedBy = "isobar-operator"
)

// Component is a part of a fleet.
type Component string

const (
	// Controller is the per-Gateway control plane.
	Controller Component = "controller"
	// Envoy is the data plane.
	Envoy Component = "envoy"
)

// MaxNameLength is the longest DNS label, the limit for Service names and
// label values.
const MaxNameLength = 63

// hashLength is how many hex digits of the hash a shortened name keeps.
const hashLength = 8

// Base is the GEP-1762 base name of a Gateway's objects.
func Base(gateway, gatewayClass string) string {
	return Shorten(gateway + "-" + gatewayClass)
}

// Name is the name of one component's objects of a fleet, such as the Envoy
// Service of Gateway "web" of class "isobar": "web-isobar-envoy".
func Name(gateway, gatewayClass string, c Component) string {
	return Shorten(gateway + "-" + gatewayClass + "-" + string(c))
}

// Shorten returns name if it fits in MaxNameLength, else a prefix of it
// followed by "-" and a hash of the whole name, MaxNameLength long.
func Shorten(name string) string {
	if len(name) <= MaxNameLength {
		return name
	}
	sum := sha256.Sum256([]byte(name))
	prefix := strings.TrimRight(name[:MaxNameLength-hashLength-1], "-.")
	return prefix + "-" + hex.EncodeToString(sum[:])[:hashLength]
}

// Labels are the labels of a component's objects; they also select its pods.
// A Gateway name too long for a label value is shortened like a name.
func Labels(gateway string, c Component) map[string]string {
	return map[string]string{
		LabelGatewayName: Shorten(gateway),
		LabelManagedBy:   ManagedBy,
		LabelComponent:   string(c),
	}
}
