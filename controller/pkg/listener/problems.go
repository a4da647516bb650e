package listener

import (
	"slices"

	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// A listener's validation records its problems here; its status is
// rendered from them, and other objects' status is worded from them.

// refuse records a problem of typ unless the listener has one of that type
// already: the first found is the one reported.
func (l *Listener) refuse(typ gatewayv1.ListenerConditionType, reason gatewayv1.ListenerConditionReason, msg string) {
	if !l.Has(typ) {
		l.Problems = append(l.Problems, &Problem{Type: typ, Reason: reason, Message: msg})
	}
}

// report records p, adding its message to a problem of its type found
// before, so that a person sees every one at once.
func (l *Listener) report(p *Problem) {
	for i, q := range l.Problems {
		if q.Type == p.Type {
			l.Problems[i] = q.Join(p)
			return
		}
	}
	l.Problems = append(l.Problems, p)
}

// has reports whether the listener has a problem of typ.
func (l *Listener) Has(typ gatewayv1.ListenerConditionType) bool {
	return slices.ContainsFunc(l.Problems, func(p *Problem) bool { return p.Type == typ })
}

// servingTypes are the types of the problems that keep a listener from
// serving (a conflict, a listener or reference that cannot be used), as
// opposed to a warning (OverlappingTLSConfig) or their consequence
// (Programmed).
var servingTypes = map[gatewayv1.ListenerConditionType]bool{
	gatewayv1.ListenerConditionAccepted:     true,
	gatewayv1.ListenerConditionResolvedRefs: true,
	gatewayv1.ListenerConditionConflicted:   true,
}

// servingProblem is the first problem found that keeps the listener from
// serving, or nil.
func (l *Listener) ServingProblem() *Problem {
	for _, p := range l.Problems {
		if servingTypes[p.Type] {
			return p
		}
	}
	return nil
}

// problemTrue are the condition types whose problems are reported True:
// the others are healthy when True.
var problemTrue = map[gatewayv1.ListenerConditionType]bool{
	gatewayv1.ListenerConditionConflicted:           true,
	gatewayv1.ListenerConditionOverlappingTLSConfig: true,
}

// renderConditions writes the listener's status from its problems, in the
// order found, and the healthy conditions of the types without one.
func (l *Listener) renderConditions() {
	for _, p := range l.Problems {
		l.Conds.Add(p.Type, problemTrue[p.Type], p.Reason, p.Message)
	}
	l.Conds.Set(gatewayv1.ListenerConditionAccepted, true, gatewayv1.ListenerReasonAccepted, "Listener is valid")
	l.Conds.Set(gatewayv1.ListenerConditionResolvedRefs, true, gatewayv1.ListenerReasonResolvedRefs, "All references are resolved")
	l.Conds.Set(gatewayv1.ListenerConditionConflicted, false, gatewayv1.ListenerReasonNoConflicts, "No conflicts")
	if l.Usable() {
		l.Conds.Set(gatewayv1.ListenerConditionProgrammed, true, gatewayv1.ListenerReasonProgrammed, "Listener is programmed")
	} else {
		l.Conds.Set(gatewayv1.ListenerConditionProgrammed, false, gatewayv1.ListenerReasonInvalid, "Listener is not programmed: see its other conditions")
	}
}

// ServingProblems are the problems that keep the listener from serving as
// written.
func (l *Listener) ServingProblems() []*Problem {
	var out []*Problem
	for _, p := range l.Problems {
		if servingTypes[p.Type] {
			out = append(out, p)
		}
	}
	return out
}
