// Package programmed decides the Programmed condition of a translated
// Gateway and of its ListenerSets, in one place for the live controller and
// for `isobar-controller translate`. The translator sets every other
// condition; Programmed depends on the translation (a Gateway with no valid
// listener, a ListenerSet that is not accepted, cannot be programmed) and
// on the data plane: an address assigned, and an Envoy of the fleet
// serving the Gateway's current generation with no Envoy rejecting the
// configuration. Programmed says the fleet serves the Gateway as its
// spec now is: it does not go False while a route or endpoint change is
// in flight, nor when an Envoy joins a fleet that serves (one that has
// not acknowledged its first configuration is not ready, so it gets no
// traffic); it goes False when no Envoy of the fleet is connected or
// holds the current generation, and when an Envoy rejects the
// configuration, with Envoy's message. Offline there is no data plane,
// and translate reports what the controller sets once an Envoy serves
// (Acknowledged).
package programmed

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	specaddr "isobar.dev/api/addresses"
	"isobar.dev/controller/pkg/fleetreport"
	"isobar.dev/controller/pkg/gatewayapi"
)

// DataPlane is what Programmed reads besides the translation.
type DataPlane struct {
	// Fleet is what the Envoys connected to every replica report.
	Fleet fleetreport.Fleet
	// Addresses are the Envoy Service's; NeedAddress says the Gateway
	// must have one (the controller knows its Envoy Service).
	Addresses   []gatewayv1.GatewayStatusAddress
	NeedAddress bool
	// Requested are the Gateway's spec.addresses.
	Requested []specaddr.Requested
}

// Acknowledged is a data plane that has acknowledged the configuration:
// what translate reports for.
var Acknowledged = DataPlane{Fleet: fleetreport.Fleet{Connected: 1, Holding: 1, Acknowledged: true}}

// Status sets Programmed on every Gateway of a translation and on their
// ListenerSets, each Gateway's data plane being dp. It replaces the
// entries it sets, writing none of the statuses the translation returned.
func Status(st *gatewayapi.Status, dp DataPlane) {
	parents := map[types.NamespacedName]*metav1.Condition{}
	for k, gs := range st.Gateways {
		out := Gateway(*gs, dp)
		st.Gateways[k] = &out
		parents[k] = meta.FindStatusCondition(out.Conditions, string(gatewayv1.GatewayConditionProgrammed))
	}
	for k, ls := range st.ListenerSets {
		st.ListenerSets[k] = &gatewayapi.ListenerSetStatus{Gateway: ls.Gateway, Status: ListenerSet(ls.Status, parents[ls.Gateway])}
	}
}

// Gateway returns a translated Gateway's status with its Programmed
// condition: false while it is not accepted (the translator refuses a
// Gateway only when none of its listeners is valid) or the data plane has
// not programmed it, else true.
func Gateway(gs gatewayv1.GatewayStatus, dp DataPlane) gatewayv1.GatewayStatus {
	out := *gs.DeepCopy()
	accepted := meta.FindStatusCondition(out.Conditions, string(gatewayv1.GatewayConditionAccepted))
	if accepted == nil {
		return out
	}
	reason, msg := dataPlaneProblem(dp)
	switch {
	case accepted.Status != metav1.ConditionTrue:
		reason, msg = gatewayv1.GatewayReasonInvalid, "no listener can be programmed"
	case reason != "":
	case len(out.Listeners) == 0:
		reason, msg = gatewayv1.GatewayReasonProgrammed, "Gateway has no listeners"
	default:
		reason, msg = gatewayv1.GatewayReasonProgrammed, "Gateway is programmed"
	}
	out.Conditions = withCondition(out.Conditions, gatewayv1.GatewayConditionProgrammed, reason == gatewayv1.GatewayReasonProgrammed, reason, msg, accepted.ObservedGeneration)
	return out
}

// dataPlaneProblem says why the data plane has not programmed the
// Gateway's configuration, or nothing.
func dataPlaneProblem(dp DataPlane) (gatewayv1.GatewayConditionReason, string) {
	if reason, msg := addressProblem(dp.Requested, dp.Addresses); reason != "" {
		return reason, msg
	}
	f := dp.Fleet
	switch {
	case dp.NeedAddress && len(dp.Addresses) == 0:
		return gatewayv1.GatewayReasonAddressNotAssigned, "the Envoy Service has no address yet: a LoadBalancer Service waits for the cluster's load balancer, " +
			"which kind and bare metal lack (publish Envoy with the profile's envoy.networkPublishing.type NodePortService or ClusterIPService there)"
	case f.Connected == 0:
		return gatewayv1.GatewayReasonPending, "no Envoy of the fleet is connected"
	case len(f.Rejections) > 0:
		return gatewayv1.GatewayReasonInvalid, fmt.Sprintf("Envoy rejected the configuration: %v", f.Rejections)
	case len(f.Behind) > 0:
		return gatewayv1.GatewayReasonPending, fmt.Sprintf("waiting for replicas %s to translate the Gateway's current generation", strings.Join(f.Behind, ", "))
	case f.Holding == 0:
		return gatewayv1.GatewayReasonPending, fmt.Sprintf("waiting for an Envoy of the %d connected to acknowledge the configuration of the Gateway's current generation", f.Connected)
	}
	return "", ""
}

// addressProblem says why the Gateway lacks an address it requested
// (spec.addresses): one the Service cannot take (the operator left it out),
// or one the Service has not got (yet: a load balancer may assign it).
func addressProblem(requested []specaddr.Requested, addresses []gatewayv1.GatewayStatusAddress) (gatewayv1.GatewayConditionReason, string) {
	for _, r := range requested {
		if r.Unusable != "" {
			return gatewayv1.GatewayReasonAddressNotUsable, fmt.Sprintf("spec.addresses[%d] %s cannot be used: %s", r.Index, r.IP, r.Unusable)
		}
	}
	for _, r := range requested {
		if r.IP != "" && !slices.ContainsFunc(addresses, func(a gatewayv1.GatewayStatusAddress) bool { return a.Value == r.IP }) {
			return gatewayv1.GatewayReasonAddressNotAssigned, fmt.Sprintf("spec.addresses[%d] %s is not assigned to the Envoy Service (yet)", r.Index, r.IP)
		}
	}
	return "", ""
}

// ListenerSet returns a ListenerSet's status with its Programmed condition:
// false while it is not accepted (with its Accepted reason and message),
// or while its Gateway is not programmed; else true, naming its
// programmed listeners when some of them are not.
func ListenerSet(st gatewayv1.ListenerSetStatus, gateway *metav1.Condition) gatewayv1.ListenerSetStatus {
	out := *st.DeepCopy()
	accepted := meta.FindStatusCondition(out.Conditions, string(gatewayv1.ListenerSetConditionAccepted))
	if accepted == nil {
		return out
	}
	var usable []string
	for _, l := range out.Listeners {
		if meta.IsStatusConditionTrue(l.Conditions, string(gatewayv1.ListenerConditionProgrammed)) {
			usable = append(usable, string(l.Name))
		}
	}
	reason, msg := gatewayv1.ListenerSetReasonProgrammed, "ListenerSet is programmed"
	switch {
	case accepted.Status != metav1.ConditionTrue:
		reason, msg = gatewayv1.ListenerSetConditionReason(accepted.Reason), accepted.Message
	case gateway != nil && gateway.Status != metav1.ConditionTrue:
		reason, msg = "ParentNotProgrammed", "the Gateway is not programmed: "+gateway.Message
	case len(usable) < len(out.Listeners):
		msg = fmt.Sprintf("listeners %v are programmed", usable)
	}
	out.Conditions = withCondition(out.Conditions, gatewayv1.ListenerSetConditionProgrammed, reason == gatewayv1.ListenerSetReasonProgrammed, reason, msg, accepted.ObservedGeneration)
	return out
}

// withCondition returns conds with the condition of type typ replaced or
// added, ordered by type as the translator orders them. It sets no
// transition time: the status writer does.
func withCondition[T, R ~string](conds []metav1.Condition, typ T, status bool, reason R, msg string, generation int64) []metav1.Condition {
	c := metav1.Condition{Type: string(typ), Status: metav1.ConditionFalse, Reason: string(reason), Message: msg, ObservedGeneration: generation}
	if status {
		c.Status = metav1.ConditionTrue
	}
	out := slices.DeleteFunc(slices.Clone(conds), func(o metav1.Condition) bool { return o.Type == c.Type })
	out = append(out, c)
	slices.SortFunc(out, func(a, b metav1.Condition) int { return strings.Compare(a.Type, b.Type) })
	return out
}
