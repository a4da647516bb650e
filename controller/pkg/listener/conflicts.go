package listener

import (
	"fmt"
	"slices"
	"strings"

	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"isobar.dev/controller/pkg/engine"
	"isobar.dev/controller/pkg/hostname"
)

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
func checkConflicts(ls []*Listener) {
	var kept []*Listener // by earlier owners
	for start := 0; start < len(ls); {
		end := start
		for end < len(ls) && ls[end].Set == ls[start].Set {
			end++
		}
		var own []*Listener
		for _, l := range ls[start:end] {
			if l.Family == engine.FamilyNone {
				continue
			}
			if w := conflictWith(l, kept); w != nil {
				reason, msg := gatewayv1.ListenerReasonHostnameConflict, fmt.Sprintf("%s, which takes precedence, has hostname %q on port %d too", describe(w), hostname.OrAny(w.Hostname), l.Spec.Port)
				if w.Family != l.Family {
					reason, msg = gatewayv1.ListenerReasonProtocolConflict, fmt.Sprintf("%s, which takes precedence, serves port %d with protocol %s", describe(w), l.Spec.Port, w.Spec.Protocol)
				}
				markConflicted(l, reason, msg)
				continue
			}
			own = append(own, l)
		}
		checkOwnConflicts(own)
		for _, l := range own {
			if !l.Has(gatewayv1.ListenerConditionConflicted) {
				kept = append(kept, l)
			}
		}
		start = end
	}
}

// conflictWith returns the first listener of kept that l cannot share its
// port with, or nil.
func conflictWith(l *Listener, kept []*Listener) *Listener {
	for _, k := range kept {
		if k.Spec.Port == l.Spec.Port && (k.Family == engine.FamilyUDP) == (l.Family == engine.FamilyUDP) && (k.Family != l.Family || k.Hostname == l.Hostname) {
			return k
		}
	}
	return nil
}

// describe names a listener for a message, with its owner when that is a
// ListenerSet.
func describe(l *Listener) string {
	switch {
	case l.Set == nil:
		return fmt.Sprintf("Gateway listener %q", l.Spec.Name)
	case !l.Set.IsListenerSet():
		return fmt.Sprintf("the %s %s of %s %s/%s", l.Set.Noun, l.Hostname, l.Set.Kind, l.Set.Meta.Namespace, l.Set.Meta.Name)
	}
	return fmt.Sprintf("listener %q of ListenerSet %s/%s", l.Spec.Name, l.Set.Meta.Namespace, l.Set.Meta.Name)
}

// checkOwnConflicts applies the rules among the listeners of one owner.
func checkOwnConflicts(ls []*Listener) {
	byPort := map[engine.TableKey][]*Listener{}
	var ports []engine.TableKey
	for _, l := range ls {
		k := engine.TableKey{Port: l.Spec.Port, UDP: l.Family == engine.FamilyUDP}
		if byPort[k] == nil {
			ports = append(ports, k)
		}
		byPort[k] = append(byPort[k], l)
	}
	for _, k := range ports {
		on, port := byPort[k], k.Port
		var protocols []string
		for _, l := range on {
			if p := string(l.Spec.Protocol); !slices.Contains(protocols, p) {
				protocols = append(protocols, p)
			}
		}
		if slices.ContainsFunc(on, func(l *Listener) bool { return l.Family != on[0].Family }) {
			for _, l := range on {
				markConflicted(l, gatewayv1.ListenerReasonProtocolConflict, fmt.Sprintf("port %d has listeners of protocols %v that cannot share it (%s)", port, protocols, names(on)))
			}
			continue
		}
		byHost := map[string][]*Listener{}
		for _, l := range on {
			byHost[l.Hostname] = append(byHost[l.Hostname], l)
		}
		for _, l := range on {
			same := byHost[l.Hostname]
			if len(same) < 2 {
				continue
			}
			msg := fmt.Sprintf("listeners %s on port %d have the same hostname %q", names(same), port, l.Hostname)
			if l.Hostname == "" {
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
func markConflicted(l *Listener, reason gatewayv1.ListenerConditionReason, msg string) {
	l.refuse(gatewayv1.ListenerConditionConflicted, reason, msg)
	l.refuse(gatewayv1.ListenerConditionAccepted, reason, msg)
	l.refuse(gatewayv1.ListenerConditionProgrammed, reason, msg)
}

func names(ls []*Listener) string {
	out := make([]string, len(ls))
	for i, l := range ls {
		out[i] = string(l.Spec.Name)
	}
	return strings.Join(out, ", ")
}

// checkOverlappingTLS warns about terminating listeners on one port whose
// hostnames overlap ("*.example.com" and "foo.example.com"): a client may
// then see either certificate for a name both cover, depending on its SNI.
// Both keep working; the condition says so.
func checkOverlappingTLS(ls []*Listener) {
	for i, a := range ls {
		for _, b := range ls[i+1:] {
			if a.Spec.Port != b.Spec.Port || !a.TerminatesTLS() || !b.TerminatesTLS() || a.Hostname == b.Hostname {
				continue
			}
			if hostname.Matches(a.Hostname, b.Hostname) || hostname.Matches(b.Hostname, a.Hostname) {
				for _, l := range []*Listener{a, b} {
					l.report(&Problem{Type: gatewayv1.ListenerConditionOverlappingTLSConfig, Reason: gatewayv1.ListenerReasonOverlappingHostnames,
						Message: fmt.Sprintf("hostname %q overlaps another TLS listener's on port %d", l.Hostname, l.Spec.Port)})
				}
			}
		}
	}
}
