package listener

import (
	"fmt"
	"testing"

	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"isobar.dev/controller/pkg/condition"
)

// A listener's status is rendered from the problems its validation
// recorded: the first problem of a type sets its reason, a reported one
// adds its message, conflicts and overlaps are True, and the types
// without a problem are healthy.
func TestListenerConditionsFromProblems(t *testing.T) {
	const (
		accepted = gatewayv1.ListenerConditionAccepted
		resolved = gatewayv1.ListenerConditionResolvedRefs
	)
	for _, tc := range []struct {
		name    string
		record  func(l *Listener)
		want    []string
		serving string
	}{{
		name: "none",
		want: []string{
			"Accepted True Accepted: Listener is valid", "Conflicted False NoConflicts: No conflicts", "Programmed True Programmed: Listener is programmed", "ResolvedRefs True ResolvedRefs: All references are resolved",
		},
	}, {
		name: "the first refusal of a type is reported",
		record: func(l *Listener) {
			l.refuse(accepted, gatewayv1.ListenerReasonUnsupportedValue, "hostname is invalid")
			l.refuse(accepted, gatewayv1.ListenerReasonPortUnavailable, "port is refused")
		},
		want: []string{
			"Accepted False UnsupportedValue: hostname is invalid", "Conflicted False NoConflicts: No conflicts",
			"Programmed False Invalid: Listener is not programmed: see its other conditions", "ResolvedRefs True ResolvedRefs: All references are resolved",
		},
		serving: "Accepted UnsupportedValue: hostname is invalid",
	}, {
		name: "reported problems of a type add their messages",
		record: func(l *Listener) {
			l.report(condition.UnresolvedListenerRef(gatewayv1.ListenerReasonInvalidCertificateRef, "Secret a/x does not exist"))
			l.report(condition.UnresolvedListenerRef(gatewayv1.ListenerReasonRefNotPermitted, "certificateRef to Secret b/y is not permitted"))
			l.report(condition.UnresolvedListenerRef(gatewayv1.ListenerReasonRefNotPermitted, "Secret a/x does not exist"))
		},
		want: []string{
			"Accepted True Accepted: Listener is valid", "Conflicted False NoConflicts: No conflicts", "Programmed True Programmed: Listener is programmed",
			"ResolvedRefs False InvalidCertificateRef: Secret a/x does not exist; certificateRef to Secret b/y is not permitted",
		},
		serving: "ResolvedRefs InvalidCertificateRef: Secret a/x does not exist; certificateRef to Secret b/y is not permitted",
	}, {
		name: "a conflict is True and keeps the listener from serving",
		record: func(l *Listener) {
			l.report(&Problem{Type: gatewayv1.ListenerConditionOverlappingTLSConfig, Reason: gatewayv1.ListenerReasonOverlappingHostnames, Message: "overlaps"})
			markConflicted(l, gatewayv1.ListenerReasonHostnameConflict, "same hostname")
		},
		want: []string{
			"Accepted False HostnameConflict: same hostname", "Conflicted True HostnameConflict: same hostname",
			"OverlappingTLSConfig True OverlappingHostnames: overlaps", "Programmed False HostnameConflict: same hostname",
			"ResolvedRefs True ResolvedRefs: All references are resolved",
		},
		serving: "Conflicted HostnameConflict: same hostname",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			l := &Listener{Spec: &gatewayv1.Listener{Name: "l"}, Kinds: []gatewayv1.RouteGroupKind{{Kind: "HTTPRoute"}}}
			if tc.record != nil {
				tc.record(l)
			}
			l.renderConditions()
			var got []string
			for _, c := range l.Conds.Sorted() {
				got = append(got, fmt.Sprintf("%s %s %s: %s", c.Type, c.Status, c.Reason, c.Message))
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("conditions:\n got %q\nwant %q", got, tc.want)
			}
			serving := ""
			if p := l.ServingProblem(); p != nil {
				serving = fmt.Sprintf("%s %s: %s", p.Type, p.Reason, p.Message)
			}
			if serving != tc.serving {
				t.Errorf("servingProblem = %q, want %q", serving, tc.serving)
			}
		})
	}
}
