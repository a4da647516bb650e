package gatewayapi

import (
	"crypto/tls"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"isobar.dev/api/ports"
	"isobar.dev/api/refgrant"
	"isobar.dev/controller/pkg/condition"
	"isobar.dev/controller/pkg/engine"
	"isobar.dev/controller/pkg/hostname"
	"isobar.dev/controller/pkg/ir"
	"isobar.dev/controller/pkg/validate"
)

// listener is a listener being translated, with its status: one of the
// Gateway's own, or one of an attached ListenerSet's (set).
type listener struct {
	spec          *gatewayv1.Listener
	set           *listenerSet // nil for the Gateway's own
	hostname      string       // "" for any
	containerPort int32
	family        engine.Family
	kinds         []gatewayv1.RouteGroupKind // supported and allowed
	certificates  []string                   // ir.Secret names
	// clientValidation checks clients' certificates (HTTPS only).
	clientValidation *ir.ClientValidation
	// badCertificates says a certificateRef did not resolve.
	badCertificates bool
	// problems are why the listener cannot be served as written, one per
	// condition type, in the order found; conds is its status, rendered
	// from them once validation ends (renderConditions). What a
	// processor's object says of the listener in its own status is worded
	// from its problems, never read back from conds.
	problems []*listenerProblem
	conds    listenerConditions
	attached int32
}

// usable reports whether routes may attach and traffic may flow. Route
// kinds it does not support make ResolvedRefs false but leave the listener
// serving the kinds it does; a certificate it cannot use does not.
func (l *listener) usable() bool {
	return !l.has(gatewayv1.ListenerConditionAccepted) &&
		!l.badCertificates && len(l.kinds) > 0 &&
		!l.has(gatewayv1.ListenerConditionConflicted)
}

// terminatesTLS reports whether the listener terminates TLS: HTTPS, or TLS
// in mode Terminate (the default).
func (l *listener) terminatesTLS() bool {
	return l.spec.Protocol == gatewayv1.HTTPSProtocolType ||
		l.spec.Protocol == gatewayv1.TLSProtocolType && l.spec.TLS != nil && (l.spec.TLS.Mode == nil || *l.spec.TLS.Mode == gatewayv1.TLSModeTerminate)
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

// validateListeners checks every listener of the Gateway and of its
// allowed ListenerSets, in that order (the specification's precedence), on
// its own and against the others. A listener that fails keeps a condition
// saying why; the others are translated as usual.
func (t *gatewayTranslator) validateListeners() []*listener {
	type owned struct {
		spec gatewayv1.Listener
		set  *listenerSet
	}
	var specs []owned
	for _, l := range t.gw.Spec.Listeners {
		specs = append(specs, owned{spec: l})
	}
	for _, s := range t.sets {
		if s.notAllowed != "" {
			continue
		}
		for _, e := range s.entries {
			specs = append(specs, owned{spec: gatewayv1.Listener(e), set: s})
		}
	}
	var all []int32
	for _, o := range specs {
		all = append(all, int32(o.spec.Port))
	}
	mapping := ports.Map(all)

	ls := make([]*listener, len(specs))
	for i := range specs {
		spec := &specs[i].spec
		l := &listener{spec: spec, set: specs[i].set, conds: listenerConditions{Generation: t.generationOf(specs[i].set)}}
		if spec.Hostname != nil {
			l.hostname = string(*spec.Hostname)
			if err := validate.Hostname(l.hostname, true); err != nil {
				l.refuse(gatewayv1.ListenerConditionAccepted, gatewayv1.ListenerReasonUnsupportedValue, err.Error())
			}
		}
		ls[i] = l
		checkAllowedNamespaces(l)
		t.checkProtocol(l)
		if err, refused := mapping.Refused[int32(spec.Port)]; refused {
			l.refuse(gatewayv1.ListenerConditionAccepted, gatewayv1.ListenerReasonPortUnavailable, err.Error())
		} else {
			l.containerPort = mapping.Container[int32(spec.Port)]
		}
		t.checkTLS(l)
		t.checkFrontendValidation(l)
		if l.set != nil {
			l.set.listeners = append(l.set.listeners, l)
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
func checkAllowedNamespaces(l *listener) {
	if l.spec.AllowedRoutes == nil || l.spec.AllowedRoutes.Namespaces == nil {
		return
	}
	ns := l.spec.AllowedRoutes.Namespaces
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
func (t *gatewayTranslator) checkProtocol(l *listener) {
	all, ok := routeKinds[l.spec.Protocol]
	if !ok {
		l.refuse(gatewayv1.ListenerConditionAccepted, gatewayv1.ListenerReasonUnsupportedProtocol,
			fmt.Sprintf("protocol %q is not supported; use HTTP, HTTPS, TLS, TCP or UDP", l.spec.Protocol))
		return
	}
	l.family = protocolFamilies[l.spec.Protocol]
	var kinds, unserved []gatewayv1.Kind
	for _, k := range all {
		if t.env.Unserved(k) {
			unserved = append(unserved, k)
		} else {
			kinds = append(kinds, k)
		}
	}
	if l.spec.AllowedRoutes == nil || len(l.spec.AllowedRoutes.Kinds) == 0 {
		for _, k := range kinds {
			l.kinds = append(l.kinds, gatewayv1.RouteGroupKind{Group: ptr.To(gatewayv1.Group(gatewayv1.GroupName)), Kind: k})
		}
		if len(kinds) == 0 {
			l.report(condition.UnresolvedListenerRef(gatewayv1.ListenerReasonInvalidRouteKinds,
				fmt.Sprintf("the cluster does not serve %v at version %s (install the Gateway API CRDs that have it)", unserved, gatewayv1.GroupVersion.Version)))
		}
		return
	}
	var invalid []string
	for _, rk := range l.spec.AllowedRoutes.Kinds {
		group := gatewayv1.GroupName
		if rk.Group != nil {
			group = string(*rk.Group)
		}
		if group != gatewayv1.GroupName || !slices.Contains(kinds, rk.Kind) {
			invalid = append(invalid, fmt.Sprintf("%s/%s", group, rk.Kind))
			continue
		}
		l.kinds = append(l.kinds, gatewayv1.RouteGroupKind{Group: ptr.To(gatewayv1.Group(group)), Kind: rk.Kind})
	}
	if len(invalid) > 0 {
		msg := fmt.Sprintf("route kinds %v are not supported on a %s listener; supported: %v", invalid, l.spec.Protocol, kinds)
		if len(unserved) > 0 {
			msg += fmt.Sprintf(" (the cluster does not serve %v at version %s)", unserved, gatewayv1.GroupVersion.Version)
		}
		l.report(condition.UnresolvedListenerRef(gatewayv1.ListenerReasonInvalidRouteKinds, msg))
	}
}

// checkConflicts applies the Gateway API's rules for distinct listeners:
// on one port, listeners of TCP-based protocols must be of one family
// (HTTP; HTTPS and TLS, which select by SNI; TCP), and within it have
// distinct hostnames (TCP, which has none: one listener per port); a UDP
// listener shares its port with those, as Envoy binds UDP apart, but with
// no other UDP listener.
// Listeners are taken owner by owner in precedence order (the Gateway's
// own, then each ListenerSet's): a listener that conflicts with one an
// earlier owner kept is Conflicted, and the earlier one keeps working, as
// the ListenerSet specification orders. Within one owner the specification
// forbids picking a winner: every listener of an indistinct set is
// Conflicted.
func checkConflicts(ls []*listener) {
	var kept []*listener // by earlier owners
	for start := 0; start < len(ls); {
		end := start
		for end < len(ls) && ls[end].set == ls[start].set {
			end++
		}
		var own []*listener
		for _, l := range ls[start:end] {
			if l.family == engine.FamilyNone {
				continue
			}
			if w := conflictWith(l, kept); w != nil {
				reason, msg := gatewayv1.ListenerReasonHostnameConflict, fmt.Sprintf("%s, which takes precedence, has hostname %q on port %d too", describe(w), hostname.OrAny(w.hostname), l.spec.Port)
				if w.family != l.family {
					reason, msg = gatewayv1.ListenerReasonProtocolConflict, fmt.Sprintf("%s, which takes precedence, serves port %d with protocol %s", describe(w), l.spec.Port, w.spec.Protocol)
				}
				markConflicted(l, reason, msg)
				continue
			}
			own = append(own, l)
		}
		checkOwnConflicts(own)
		for _, l := range own {
			if !l.has(gatewayv1.ListenerConditionConflicted) {
				kept = append(kept, l)
			}
		}
		start = end
	}
}

// conflictWith returns the first listener of kept that l cannot share its
// port with, or nil.
func conflictWith(l *listener, kept []*listener) *listener {
	for _, k := range kept {
		if k.spec.Port == l.spec.Port && (k.family == engine.FamilyUDP) == (l.family == engine.FamilyUDP) && (k.family != l.family || k.hostname == l.hostname) {
			return k
		}
	}
	return nil
}

// describe names a listener for a message, with its owner when that is a
// ListenerSet.
func describe(l *listener) string {
	switch {
	case l.set == nil:
		return fmt.Sprintf("Gateway listener %q", l.spec.Name)
	case l.set.peer != nil:
		return fmt.Sprintf("the %s %s of %s %s/%s", l.set.peer.Noun, l.hostname, l.set.peer.Kind, l.set.meta.Namespace, l.set.meta.Name)
	}
	return fmt.Sprintf("listener %q of ListenerSet %s/%s", l.spec.Name, l.set.meta.Namespace, l.set.meta.Name)
}

// checkOwnConflicts applies the rules among the listeners of one owner.
func checkOwnConflicts(ls []*listener) {
	byPort := map[engine.TableKey][]*listener{}
	var ports []engine.TableKey
	for _, l := range ls {
		k := engine.TableKey{Port: l.spec.Port, UDP: l.family == engine.FamilyUDP}
		if byPort[k] == nil {
			ports = append(ports, k)
		}
		byPort[k] = append(byPort[k], l)
	}
	for _, k := range ports {
		on, port := byPort[k], k.Port
		var protocols []string
		for _, l := range on {
			if p := string(l.spec.Protocol); !slices.Contains(protocols, p) {
				protocols = append(protocols, p)
			}
		}
		if slices.ContainsFunc(on, func(l *listener) bool { return l.family != on[0].family }) {
			for _, l := range on {
				markConflicted(l, gatewayv1.ListenerReasonProtocolConflict, fmt.Sprintf("port %d has listeners of protocols %v that cannot share it (%s)", port, protocols, names(on)))
			}
			continue
		}
		byHost := map[string][]*listener{}
		for _, l := range on {
			byHost[l.hostname] = append(byHost[l.hostname], l)
		}
		for _, l := range on {
			same := byHost[l.hostname]
			if len(same) < 2 {
				continue
			}
			msg := fmt.Sprintf("listeners %s on port %d have the same hostname %q", names(same), port, l.hostname)
			if l.hostname == "" {
				msg = fmt.Sprintf("listeners %s on port %d have no hostname to tell them apart", names(same), port)
			}
			markConflicted(l, gatewayv1.ListenerReasonHostnameConflict, msg)
		}
	}
}

// markConflicted marks a listener Conflicted, and so neither accepted nor
// programmed, for the same reason. Programmed's godoc prefers Invalid, but
// v1.6.3's conformance suite (ListenerSetProtocolConflict,
// ListenerSetHostnameConflict) requires the conflict's reason there too,
// and the suite decides.
func markConflicted(l *listener, reason gatewayv1.ListenerConditionReason, msg string) {
	l.refuse(gatewayv1.ListenerConditionConflicted, reason, msg)
	l.refuse(gatewayv1.ListenerConditionAccepted, reason, msg)
	l.refuse(gatewayv1.ListenerConditionProgrammed, reason, msg)
}

func names(ls []*listener) string {
	out := make([]string, len(ls))
	for i, l := range ls {
		out[i] = string(l.spec.Name)
	}
	return strings.Join(out, ", ")
}

// checkTLS resolves the certificates of HTTPS and terminating TLS listeners.
func (t *gatewayTranslator) checkTLS(l *listener) {
	p := l.spec.Protocol
	if p != gatewayv1.HTTPSProtocolType && p != gatewayv1.TLSProtocolType {
		return
	}
	if l.spec.TLS == nil {
		l.refuse(gatewayv1.ListenerConditionAccepted, gatewayv1.ListenerReasonUnsupportedValue,
			fmt.Sprintf("a %s listener needs tls", p))
		return
	}
	mode := gatewayv1.TLSModeTerminate
	if l.spec.TLS.Mode != nil {
		mode = *l.spec.TLS.Mode
	}
	if mode == gatewayv1.TLSModePassthrough {
		if p == gatewayv1.HTTPSProtocolType {
			l.refuse(gatewayv1.ListenerConditionAccepted, gatewayv1.ListenerReasonUnsupportedValue,
				"tls.mode Passthrough is not allowed on an HTTPS listener; use protocol TLS")
		}
		return
	}
	if len(l.spec.TLS.CertificateRefs) == 0 {
		l.badCertificates = true
		l.report(condition.UnresolvedListenerRef(gatewayv1.ListenerReasonInvalidCertificateRef,
			"tls.certificateRefs is empty; a terminating listener needs a certificate"))
		return
	}
	for _, ref := range l.spec.TLS.CertificateRefs {
		name, err := t.resolveCertificate(ref, t.ownerOf(l))
		if err != nil {
			l.badCertificates = true
			l.report(err)
			continue
		}
		l.certificates = append(l.certificates, name)
	}
}

// resolveCertificate checks one certificateRef of from (the Gateway, or a
// ListenerSet: a ReferenceGrant to one is not one to the other) and adds
// its Secret to the IR, returning the Secret's IR name.
func (t *gatewayTranslator) resolveCertificate(ref gatewayv1.SecretObjectReference, from owner) (string, *listenerProblem) {
	group, kind := "", "Secret"
	if ref.Group != nil {
		group = string(*ref.Group)
	}
	if ref.Kind != nil {
		kind = string(*ref.Kind)
	}
	ns := from.namespace
	if ref.Namespace != nil {
		ns = string(*ref.Namespace)
	}
	if group != "" || kind != "Secret" {
		return "", condition.UnresolvedListenerRef(gatewayv1.ListenerReasonInvalidCertificateRef,
			fmt.Sprintf("certificateRef %s/%s %s: only core Secrets are supported", group, kind, ref.Name))
	}
	if ns != from.namespace && !t.env.Granted(refgrant.From{Group: from.group, Kind: from.kind, Namespace: from.namespace}, ns, refgrant.To{Kind: "Secret", Name: string(ref.Name)}) {
		return "", condition.UnresolvedListenerRef(gatewayv1.ListenerReasonRefNotPermitted,
			fmt.Sprintf("certificateRef to Secret %s/%s is not permitted: no %s in namespace %s allows it", ns, ref.Name, from.grant, ns))
	}
	secret, ok := t.env.Secret(ns, string(ref.Name))
	if !ok {
		return "", condition.UnresolvedListenerRef(gatewayv1.ListenerReasonInvalidCertificateRef,
			fmt.Sprintf("Secret %s/%s does not exist", ns, ref.Name))
	}
	name := ns + "/" + string(ref.Name)
	if _, done := t.secrets[name]; done {
		return name, nil
	}
	crt, key := secret.Data[corev1.TLSCertKey], secret.Data[corev1.TLSPrivateKeyKey]
	if _, err := tls.X509KeyPair(crt, key); err != nil {
		// The error names what is wrong, never the key material.
		return "", condition.UnresolvedListenerRef(gatewayv1.ListenerReasonInvalidCertificateRef,
			fmt.Sprintf("Secret %s/%s does not hold a usable certificate and key in tls.crt and tls.key: %v", ns, ref.Name, err))
	}
	t.secrets[name] = &ir.Secret{Name: name, Certificate: crt, PrivateKey: key}
	return name, nil
}

// checkOverlappingTLS warns about terminating listeners on one port whose
// hostnames overlap ("*.example.com" and "foo.example.com"): a client may
// then see either certificate for a name both cover, depending on its SNI.
// Both keep working; the condition says so.
func checkOverlappingTLS(ls []*listener) {
	for i, a := range ls {
		for _, b := range ls[i+1:] {
			if a.spec.Port != b.spec.Port || !a.terminatesTLS() || !b.terminatesTLS() || a.hostname == b.hostname {
				continue
			}
			if hostname.Matches(a.hostname, b.hostname) || hostname.Matches(b.hostname, a.hostname) {
				for _, l := range []*listener{a, b} {
					l.report(&listenerProblem{Type: gatewayv1.ListenerConditionOverlappingTLSConfig, Reason: gatewayv1.ListenerReasonOverlappingHostnames,
						Message: fmt.Sprintf("hostname %q overlaps another TLS listener's on port %d", l.hostname, l.spec.Port)})
				}
			}
		}
	}
}
