// Package listener is the validated listener model every processor reads:
// a Gateway's listeners and those of the sets it takes (ListenerSets, and
// the TLS hosts of other routing APIs' objects), each with its port,
// hostname, certificates, allowed route kinds, conflicts and status. It is
// pure: it reads the snapshot through an env.Env.
package listener

import (
	"fmt"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"isobar.dev/api/ports"
	"isobar.dev/controller/pkg/condition"
	"isobar.dev/controller/pkg/engine"
	"isobar.dev/controller/pkg/ir"
	"isobar.dev/controller/pkg/validate"
)

// Listener is a listener of a Gateway, validated, with its status: one of
// the Gateway's own, or one of a Set's.
type Listener struct {
	Spec          *gatewayv1.Listener
	Set           *Set   // nil for the Gateway's own
	Hostname      string // "" for any
	ContainerPort int32
	Family        engine.Family
	Kinds         []gatewayv1.RouteGroupKind // supported and allowed
	Certificates  []string                   // ir.Secret names
	// ClientValidation checks clients' certificates (HTTPS only).
	ClientValidation *ir.ClientValidation
	// BadCertificates says a certificateRef did not resolve.
	BadCertificates bool
	// Problems are why the listener cannot be served as written, one per
	// condition type, in the order found; Conds is its status, rendered
	// from them once validation ends. What another object says of the
	// listener in its own status is worded from its problems, never read
	// back from Conds.
	Problems []*Problem
	Conds    condition.Listener
	// Attached is how many routes attach to it.
	Attached int32
}

// Usable reports whether routes may attach and traffic may flow. Route
// kinds it does not support make ResolvedRefs false but leave the listener
// serving the kinds it does; a certificate it cannot use does not.
func (l *Listener) Usable() bool {
	return !l.Has(gatewayv1.ListenerConditionAccepted) &&
		!l.BadCertificates && len(l.Kinds) > 0 &&
		!l.Has(gatewayv1.ListenerConditionConflicted)
}

// TerminatesTLS reports whether the listener terminates TLS: HTTPS, or TLS
// in mode Terminate (the default).
func (l *Listener) TerminatesTLS() bool {
	return l.Spec.Protocol == gatewayv1.HTTPSProtocolType ||
		l.Spec.Protocol == gatewayv1.TLSProtocolType && l.Spec.TLS != nil && (l.Spec.TLS.Mode == nil || *l.Spec.TLS.Mode == gatewayv1.TLSModeTerminate)
}

var protocolFamilies = map[gatewayv1.ProtocolType]engine.Family{
	gatewayv1.HTTPProtocolType:  engine.FamilyHTTP,
	gatewayv1.HTTPSProtocolType: engine.FamilyTLS,
	gatewayv1.TLSProtocolType:   engine.FamilyTLS,
	gatewayv1.TCPProtocolType:   engine.FamilyTCP,
	gatewayv1.UDPProtocolType:   engine.FamilyUDP,
}

// routeKinds are the route kinds each protocol supports, in the order they
// are reported.
var routeKinds = map[gatewayv1.ProtocolType][]gatewayv1.Kind{
	gatewayv1.HTTPProtocolType:  {"HTTPRoute", "GRPCRoute"},
	gatewayv1.HTTPSProtocolType: {"HTTPRoute", "GRPCRoute"},
	gatewayv1.TLSProtocolType:   {"TLSRoute"},
	gatewayv1.TCPProtocolType:   {"TCPRoute"},
	gatewayv1.UDPProtocolType:   {"UDPRoute"},
}

// Listeners checks every listener of the Gateway and of its allowed sets,
// in that order (the specification's precedence), on its own and against
// the others. A listener that fails keeps a condition saying why; the
// others are translated as usual.
func (v *Validation) Listeners(sets []*Set) []*Listener {
	type owned struct {
		Spec gatewayv1.Listener
		Set  *Set
	}
	var specs []owned
	for _, l := range v.Gateway.Spec.Listeners {
		specs = append(specs, owned{Spec: l})
	}
	for _, s := range sets {
		if s.NotAllowed != "" {
			continue
		}
		for _, e := range s.Entries {
			specs = append(specs, owned{Spec: gatewayv1.Listener(e), Set: s})
		}
	}
	var all []int32
	for _, o := range specs {
		all = append(all, int32(o.Spec.Port))
	}
	mapping := ports.Map(all)

	ls := make([]*Listener, len(specs))
	for i := range specs {
		spec := &specs[i].Spec
		l := &Listener{Spec: spec, Set: specs[i].Set, Conds: condition.Listener{Generation: v.generationOf(specs[i].Set)}}
		if spec.Hostname != nil {
			l.Hostname = string(*spec.Hostname)
			if err := validate.Hostname(l.Hostname, true); err != nil {
				l.refuse(gatewayv1.ListenerConditionAccepted, gatewayv1.ListenerReasonUnsupportedValue, err.Error())
			}
		}
		ls[i] = l
		checkAllowedNamespaces(l)
		v.checkProtocol(l)
		if err, refused := mapping.Refused[int32(spec.Port)]; refused {
			l.refuse(gatewayv1.ListenerConditionAccepted, gatewayv1.ListenerReasonPortUnavailable, err.Error())
		} else {
			l.ContainerPort = mapping.Container[int32(spec.Port)]
		}
		v.checkTLS(l)
		v.checkFrontendValidation(l)
		if l.Set != nil {
			l.Set.Listeners = append(l.Set.Listeners, l)
		}
	}
	checkConflicts(ls)
	checkOverlappingTLS(ls)
	for _, l := range ls {
		l.renderConditions()
	}
	return ls
}

// checkAllowedNamespaces refuses a listener whose allowedRoutes select
// namespaces with a selector that is missing or does not parse: the godoc
// requires a selector with "from: Selector", and without one no route can
// be judged. The CRD's schema lets both through.
func checkAllowedNamespaces(l *Listener) {
	if l.Spec.AllowedRoutes == nil || l.Spec.AllowedRoutes.Namespaces == nil {
		return
	}
	ns := l.Spec.AllowedRoutes.Namespaces
	if ns.From == nil || *ns.From != gatewayv1.NamespacesFromSelector {
		return
	}
	if ns.Selector == nil {
		l.refuse(gatewayv1.ListenerConditionAccepted, gatewayv1.ListenerReasonUnsupportedValue,
			"allowedRoutes.namespaces.from is Selector and allowedRoutes.namespaces.selector is not set")
		return
	}
	if _, err := metav1.LabelSelectorAsSelector(ns.Selector); err != nil {
		l.refuse(gatewayv1.ListenerConditionAccepted, gatewayv1.ListenerReasonUnsupportedValue,
			fmt.Sprintf("allowedRoutes.namespaces.selector is invalid: %v", err))
	}
}

// checkProtocol checks the protocol and the allowed route kinds. A kind the
// cluster does not serve is not supported: no route of it can exist.
func (v *Validation) checkProtocol(l *Listener) {
	all, ok := routeKinds[l.Spec.Protocol]
	if !ok {
		l.refuse(gatewayv1.ListenerConditionAccepted, gatewayv1.ListenerReasonUnsupportedProtocol,
			fmt.Sprintf("protocol %q is not supported; use HTTP, HTTPS, TLS, TCP or UDP", l.Spec.Protocol))
		return
	}
	l.Family = protocolFamilies[l.Spec.Protocol]
	var kinds, unserved []gatewayv1.Kind
	for _, k := range all {
		if v.Env.Unserved(k) {
			unserved = append(unserved, k)
		} else {
			kinds = append(kinds, k)
		}
	}
	if l.Spec.AllowedRoutes == nil || len(l.Spec.AllowedRoutes.Kinds) == 0 {
		for _, k := range kinds {
			l.Kinds = append(l.Kinds, gatewayv1.RouteGroupKind{Group: ptr.To(gatewayv1.Group(gatewayv1.GroupName)), Kind: k})
		}
		if len(kinds) == 0 {
			l.report(condition.UnresolvedListenerRef(gatewayv1.ListenerReasonInvalidRouteKinds,
				fmt.Sprintf("the cluster does not serve %v at version %s (install the Gateway API CRDs that have it)", unserved, gatewayv1.GroupVersion.Version)))
		}
		return
	}
	var invalid []string
	for _, rk := range l.Spec.AllowedRoutes.Kinds {
		group := gatewayv1.GroupName
		if rk.Group != nil {
			group = string(*rk.Group)
		}
		if group != gatewayv1.GroupName || !slices.Contains(kinds, rk.Kind) {
			invalid = append(invalid, fmt.Sprintf("%s/%s", group, rk.Kind))
			continue
		}
		l.Kinds = append(l.Kinds, gatewayv1.RouteGroupKind{Group: ptr.To(gatewayv1.Group(group)), Kind: rk.Kind})
	}
	if len(invalid) > 0 {
		msg := fmt.Sprintf("route kinds %v are not supported on a %s listener; supported: %v", invalid, l.Spec.Protocol, kinds)
		if len(unserved) > 0 {
			msg += fmt.Sprintf(" (the cluster does not serve %v at version %s)", unserved, gatewayv1.GroupVersion.Version)
		}
		l.report(condition.UnresolvedListenerRef(gatewayv1.ListenerReasonInvalidRouteKinds, msg))
	}
}
