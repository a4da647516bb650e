package render

import (
	"cmp"
	"errors"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"isobar.dev/api/addresses"
	"isobar.dev/api/fleet"
	"isobar.dev/api/ports"
	"isobar.dev/api/v1alpha1"
)

// envoyService publishes the Gateway's listeners (and its ListenerSets'): one port per distinct
// listener port and protocol (TCP, or UDP for UDP listeners), its target
// the container port the api module maps it to. Ports the mapping refuses
// are left out; the controller reports them on the listeners.
func (r *renderer) envoyService() (*corev1.Service, error) {
	gw := r.in.Gateway
	np := r.in.Spec.Envoy.NetworkPublishing
	listeners := r.in.Listeners
	if listeners == nil {
		listeners = gw.Spec.Listeners
	}
	var listenerPorts []int32
	for _, l := range listeners {
		listenerPorts = append(listenerPorts, int32(l.Port))
	}
	mapping := ports.Map(listenerPorts)
	type key struct {
		port  int32
		proto corev1.Protocol
	}
	seen := map[key]bool{}
	var sp []corev1.ServicePort
	for _, l := range listeners {
		p := int32(l.Port)
		target, ok := mapping.Container[p]
		if !ok {
			continue
		}
		proto := corev1.ProtocolTCP
		if l.Protocol == gatewayv1.UDPProtocolType {
			proto = corev1.ProtocolUDP
		}
		k := key{p, proto}
		if seen[k] {
			continue
		}
		seen[k] = true
		port := corev1.ServicePort{
			Name: fmt.Sprintf("%s-%d", map[corev1.Protocol]string{corev1.ProtocolTCP: "tcp", corev1.ProtocolUDP: "udp"}[proto], p),
			Port: p, TargetPort: intstr.FromInt32(target), Protocol: proto,
		}
		for _, n := range np.NodePorts {
			if n.Port == p {
				port.NodePort = n.NodePort
			}
		}
		sp = append(sp, port)
	}
	slices.SortFunc(sp, func(a, b corev1.ServicePort) int {
		return cmp.Or(cmp.Compare(a.Port, b.Port), cmp.Compare(a.Protocol, b.Protocol))
	})

	typ := corev1.ServiceTypeLoadBalancer
	switch np.Type {
	case v1alpha1.NodePortServicePublishing:
		typ = corev1.ServiceTypeNodePort
	case v1alpha1.ClusterIPServicePublishing:
		typ = corev1.ServiceTypeClusterIP
	}
	meta := r.meta(r.names.Envoy, fleet.Envoy)
	if len(np.ServiceAnnotations) > 0 && meta.Annotations == nil {
		meta.Annotations = map[string]string{}
	}
	for k, v := range np.ServiceAnnotations {
		meta.Annotations[k] = v
	}
	svc := &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: meta,
		Spec: corev1.ServiceSpec{
			Type:           typ,
			Selector:       r.selector(fleet.Envoy),
			Ports:          sp,
			IPFamilyPolicy: np.IPFamilyPolicy,
		},
	}
	if typ != corev1.ServiceTypeClusterIP {
		// Local keeps the client's address and avoids a second hop.
		policy := corev1.ServiceExternalTrafficPolicyLocal
		if np.ExternalTrafficPolicy != nil {
			policy = *np.ExternalTrafficPolicy
		}
		svc.Spec.ExternalTrafficPolicy = policy
	}
	if typ == corev1.ServiceTypeLoadBalancer {
		svc.Spec.LoadBalancerClass = np.LoadBalancerClass
		for _, c := range np.LoadBalancerSourceRanges {
			svc.Spec.LoadBalancerSourceRanges = append(svc.Spec.LoadBalancerSourceRanges, string(c))
		}
	}
	// spec.addresses (api/addresses): IP addresses become the load
	// balancer's IP (one) or external IPs; one without a value asks for
	// any address, which the Service gets anyway (GatewayAddressEmpty);
	// one the API server would refuse is left out, and the controller
	// reports it (AddressNotUsable); another type cannot be honoured.
	requested, unsupported := addresses.Of(gw)
	if unsupported != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnsupportedAddress, unsupported)
	}
	var ips []string
	for _, a := range requested {
		if a.IP != "" && a.Unusable == "" {
			ips = append(ips, a.IP)
		}
	}
	if typ == corev1.ServiceTypeLoadBalancer && len(ips) == 1 {
		svc.Spec.LoadBalancerIP = ips[0]
	} else {
		svc.Spec.ExternalIPs = ips
	}
	return svc, nil
}

// ErrUnsupportedAddress is a Gateway address of a type the fleet's Service
// cannot honour: the Gateway is refused with reason UnsupportedAddress.
var ErrUnsupportedAddress = errors.New("unsupported address")
