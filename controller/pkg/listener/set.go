package listener

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"isobar.dev/controller/pkg/condition"
	"isobar.dev/controller/pkg/env"
	"isobar.dev/controller/pkg/ir"
)

// Problem is why a listener cannot be served as written.
type Problem = condition.ListenerProblem

// Set is a set of listeners a Gateway takes besides its own: a ListenerSet
// whose parentRef names it, allowed or not, or the TLS hosts of another
// routing API's object (a root HTTPProxy's TLS virtual host, an Ingress's
// TLS hosts), which the Gateway allows whatever its allowedListeners: they
// are listeners of its own Ingress listeners' port.
type Set struct {
	Meta    *metav1.ObjectMeta
	Entries []gatewayv1.ListenerEntry
	// Group and Kind are the object's: its references are checked as
	// from it. Grant names what may allow it a certificate in another
	// namespace, and Noun what one of its listeners is ("TLS host"), for
	// messages.
	Group, Kind string
	Grant, Noun string
	// NotAllowed says why the Gateway does not take a ListenerSet, or "".
	NotAllowed string
	// ChainTLS is what another API's object asks of its listeners'
	// filter chains once its routes are attached, or nil.
	ChainTLS func() *ir.ChainTLS
	// Fallback is the certificate of a chain whose ChainTLS asks for the
	// fallback.
	Fallback *types.NamespacedName
	// Listeners are the set's, validated, in spec order; none when not
	// allowed.
	Listeners []*Listener
}

// NewListenerSet is the Set of a ListenerSet object.
func NewListenerSet(ls *gatewayv1.ListenerSet, notAllowed string) *Set {
	return &Set{Meta: &ls.ObjectMeta, Entries: ls.Spec.Listeners, Group: gatewayv1.GroupName, Kind: "ListenerSet", Grant: "ReferenceGrant", NotAllowed: notAllowed}
}

// IsListenerSet says the set is a ListenerSet object's.
func (s *Set) IsListenerSet() bool { return s.Kind == "ListenerSet" && s.Group == gatewayv1.GroupName }

// Owner is what owns a listener's references: the Gateway, a ListenerSet
// or another API's object; Grant names what may allow it a certificate in
// another namespace.
type Owner struct {
	Group, Kind string
	Namespace   string
	Grant       string
}

// Validation validates the listeners of one Gateway.
type Validation struct {
	Gateway *gatewayv1.Gateway
	// Env reads the snapshot; what listeners read is read afresh on every
	// translation, so an Env that does not record will do.
	Env env.Env
	// Secrets are the IR's Secrets by name, which the certificates
	// resolved join.
	Secrets map[string]*ir.Secret
}

// OwnerOf returns the owner of l (the Gateway for nil or its own
// listeners).
func (v *Validation) OwnerOf(l *Listener) Owner {
	if l == nil || l.Set == nil {
		return Owner{Group: gatewayv1.GroupName, Kind: "Gateway", Namespace: v.Gateway.Namespace, Grant: "ReferenceGrant"}
	}
	return Owner{Group: l.Set.Group, Kind: l.Set.Kind, Namespace: l.Set.Meta.Namespace, Grant: l.Set.Grant}
}

// generationOf is the generation a listener's conditions observe: its
// owner's.
func (v *Validation) generationOf(s *Set) int64 {
	if s == nil {
		return v.Gateway.Generation
	}
	return s.Meta.Generation
}
