// Package refgrant decides whether ReferenceGrants let an object refer to
// one in another namespace. The controller asks it before it resolves a
// reference, and the operator before it grants the controller read access
// to what the reference names: one rule, so that the controller is never
// allowed a reference it cannot read, nor able to read one it is not
// allowed.
package refgrant

import (
	gatewayv1beta1 "sigs.k8s.io/gateway-api/apis/v1beta1"
)

// From is the referring object's group, kind and namespace.
type From struct{ Group, Kind, Namespace string }

// To is the referred-to object's group, kind and name; its namespace is the
// grant's.
type To struct{ Group, Kind, Name string }

// Allows reports whether g, a ReferenceGrant in the referred-to object's
// namespace, lets from refer to to. A To entry without a name allows every
// object of its kind.
func Allows(g *gatewayv1beta1.ReferenceGrant, from From, to To) bool {
	matched := false
	for _, f := range g.Spec.From {
		if string(f.Group) == from.Group && string(f.Kind) == from.Kind && string(f.Namespace) == from.Namespace {
			matched = true
			break
		}
	}
	if !matched {
		return false
	}
	for _, t := range g.Spec.To {
		if string(t.Group) == to.Group && string(t.Kind) == to.Kind && (t.Name == nil || *t.Name == "" || string(*t.Name) == to.Name) {
			return true
		}
	}
	return false
}

// Permitted reports whether from may refer to to in namespace ns: the
// same namespace always, another only with a ReferenceGrant there. grants
// may hold grants of every namespace.
func Permitted(grants []*gatewayv1beta1.ReferenceGrant, from From, ns string, to To) bool {
	if ns == from.Namespace {
		return true
	}
	for _, g := range grants {
		if g.Namespace == ns && Allows(g, from, to) {
			return true
		}
	}
	return false
}
