package programmed

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	specaddr "isobar.dev/api/addresses"
	"isobar.dev/controller/pkg/fleetreport"
)

func TestGateway(t *testing.T) {
	ip := gatewayv1.IPAddressType
	assigned := []gatewayv1.GatewayStatusAddress{{Type: &ip, Value: "192.0.2.1"}}
	listener := []gatewayv1.ListenerStatus{{Name: "http"}}
	acked := fleetreport.Fleet{Connected: 2, Holding: 2, Acknowledged: true}
	accepted := func(status metav1.ConditionStatus) []metav1.Condition {
		return []metav1.Condition{{Type: "Accepted", Status: status, Reason: "R", ObservedGeneration: 3}}
	}
	missing, _ := specaddr.Of(&gatewayv1.Gateway{Spec: gatewayv1.GatewaySpec{Addresses: []gatewayv1.GatewaySpecAddress{{Value: "192.0.2.9"}}}})
	for _, tc := range []struct {
		name      string
		conds     []metav1.Condition
		listeners []gatewayv1.ListenerStatus
		dp        DataPlane
		status    metav1.ConditionStatus
		reason    gatewayv1.GatewayConditionReason
	}{
		{"acknowledged", accepted("True"), listener, DataPlane{Fleet: acked, Addresses: assigned, NeedAddress: true}, "True", gatewayv1.GatewayReasonProgrammed},
		{"translate's view", accepted("True"), listener, Acknowledged, "True", gatewayv1.GatewayReasonProgrammed},
		{"no listeners", accepted("True"), nil, Acknowledged, "True", gatewayv1.GatewayReasonProgrammed},
		{"not accepted, whatever the fleet", accepted("False"), listener, Acknowledged, "False", gatewayv1.GatewayReasonInvalid},
		{"no address", accepted("True"), listener, DataPlane{Fleet: acked, NeedAddress: true}, "False", gatewayv1.GatewayReasonAddressNotAssigned},
		{"a requested address missing", accepted("True"), listener, DataPlane{Fleet: acked, Addresses: assigned, Requested: missing}, "False", gatewayv1.GatewayReasonAddressNotAssigned},
		{"no Envoy connected", accepted("True"), listener, DataPlane{}, "False", gatewayv1.GatewayReasonPending},
		{"rejected", accepted("True"), listener, DataPlane{Fleet: fleetreport.Fleet{Connected: 1, Rejections: []string{"bad"}}}, "False", gatewayv1.GatewayReasonInvalid},
		{"a replica behind", accepted("True"), listener, DataPlane{Fleet: fleetreport.Fleet{Connected: 1, Holding: 1, Acknowledged: true, Behind: []string{"b"}}}, "False", gatewayv1.GatewayReasonPending},
		{"not acknowledged yet", accepted("True"), listener, DataPlane{Fleet: fleetreport.Fleet{Connected: 1}}, "False", gatewayv1.GatewayReasonPending},
		// A change in flight, or an Envoy joining, leaves the Envoys that
		// serve the Gateway's generation serving it.
		{"a change in flight", accepted("True"), listener, DataPlane{Fleet: fleetreport.Fleet{Connected: 2, Holding: 2}}, "True", gatewayv1.GatewayReasonProgrammed},
		{"an Envoy joining", accepted("True"), listener, DataPlane{Fleet: fleetreport.Fleet{Connected: 3, Holding: 2}}, "True", gatewayv1.GatewayReasonProgrammed},
		{"none holds the generation", accepted("True"), listener, DataPlane{Fleet: fleetreport.Fleet{Connected: 2, Acknowledged: true}}, "False", gatewayv1.GatewayReasonPending},
		{"one holds it, another rejects", accepted("True"), listener, DataPlane{Fleet: fleetreport.Fleet{Connected: 2, Holding: 1, Rejections: []string{"bad"}}}, "False", gatewayv1.GatewayReasonInvalid},
	} {
		in := gatewayv1.GatewayStatus{Conditions: tc.conds, Listeners: tc.listeners}
		out := Gateway(in, tc.dp)
		c := meta.FindStatusCondition(out.Conditions, "Programmed")
		if c == nil || c.Status != tc.status || c.Reason != string(tc.reason) || c.ObservedGeneration != 3 {
			t.Errorf("%s: Programmed %+v, want %s %s at generation 3", tc.name, c, tc.status, tc.reason)
		}
		if len(out.Conditions) != 2 || out.Conditions[0].Type != "Accepted" {
			t.Errorf("%s: conditions %+v, want Accepted then Programmed", tc.name, out.Conditions)
		}
		if len(in.Conditions) != 1 {
			t.Errorf("%s: the translated status was written", tc.name)
		}
	}
}

func TestListenerSet(t *testing.T) {
	programmedTrue := &metav1.Condition{Type: "Programmed", Status: "True"}
	pending := &metav1.Condition{Type: "Programmed", Status: "False", Message: "no Envoy of the fleet is connected"}
	listener := func(name string, programmed metav1.ConditionStatus) gatewayv1.ListenerEntryStatus {
		return gatewayv1.ListenerEntryStatus{Name: gatewayv1.SectionName(name), Conditions: []metav1.Condition{{Type: "Programmed", Status: programmed}}}
	}
	for _, tc := range []struct {
		name      string
		accepted  metav1.Condition
		listeners []gatewayv1.ListenerEntryStatus
		gateway   *metav1.Condition
		status    metav1.ConditionStatus
		reason    string
		message   string
	}{
		{"programmed", metav1.Condition{Status: "True"}, []gatewayv1.ListenerEntryStatus{listener("a", "True")}, programmedTrue, "True", "Programmed", "ListenerSet is programmed"},
		{"some listeners", metav1.Condition{Status: "True"}, []gatewayv1.ListenerEntryStatus{listener("a", "True"), listener("b", "False")}, programmedTrue, "True", "Programmed", "listeners [a] are programmed"},
		{"not allowed", metav1.Condition{Status: "False", Reason: "NotAllowed", Message: "why"}, nil, programmedTrue, "False", "NotAllowed", "why"},
		{"its Gateway not programmed", metav1.Condition{Status: "True"}, []gatewayv1.ListenerEntryStatus{listener("a", "True")}, pending, "False", "ParentNotProgrammed", "the Gateway is not programmed: no Envoy of the fleet is connected"},
		{"not accepted and its Gateway not programmed", metav1.Condition{Status: "False", Reason: "ListenersNotValid", Message: "why"}, nil, pending, "False", "ListenersNotValid", "why"},
	} {
		tc.accepted.Type = "Accepted"
		out := ListenerSet(gatewayv1.ListenerSetStatus{Conditions: []metav1.Condition{tc.accepted}, Listeners: tc.listeners}, tc.gateway)
		c := meta.FindStatusCondition(out.Conditions, "Programmed")
		if c == nil || c.Status != tc.status || c.Reason != tc.reason || c.Message != tc.message {
			t.Errorf("%s: Programmed %+v, want %s %s %q", tc.name, c, tc.status, tc.reason, tc.message)
		}
	}
}

func TestAddressProblem(t *testing.T) {
	ip := gatewayv1.IPAddressType
	assigned := []gatewayv1.GatewayStatusAddress{{Type: &ip, Value: "192.0.2.1"}}
	for _, tc := range []struct {
		requested []gatewayv1.GatewaySpecAddress
		reason    gatewayv1.GatewayConditionReason
	}{
		{nil, ""},
		{[]gatewayv1.GatewaySpecAddress{{Value: "192.0.2.1"}}, ""},
		{[]gatewayv1.GatewaySpecAddress{{Type: &ip}}, ""},
		{[]gatewayv1.GatewaySpecAddress{{Value: "192.0.2.1"}, {Value: "192.0.2.2"}}, gatewayv1.GatewayReasonAddressNotAssigned},
		{[]gatewayv1.GatewaySpecAddress{{Value: "169.254.0.9"}, {Value: "192.0.2.1"}}, gatewayv1.GatewayReasonAddressNotUsable},
	} {
		requested, _ := specaddr.Of(&gatewayv1.Gateway{Spec: gatewayv1.GatewaySpec{Addresses: tc.requested}})
		if reason, msg := addressProblem(requested, assigned); reason != tc.reason {
			t.Errorf("%v: %s (%s), want %q", tc.requested, reason, msg, tc.reason)
		}
	}
}
