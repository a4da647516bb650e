package serve

import (
	"context"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// addresses are the Envoy Service's: its load balancer's, else the
// external IPs the Gateway asked for (spec.addresses), else its cluster
// IPs. A Service named without a namespace is in the served Gateway's.
func (w *statusWriter) addresses(ctx context.Context, gateway types.NamespacedName) ([]gatewayv1.GatewayStatusAddress, error) {
	if w.opts.EnvoyService == "" {
		return nil, nil
	}
	key := client.ObjectKey{Namespace: gateway.Namespace, Name: w.opts.EnvoyService}
	if ns, name, ok := strings.Cut(w.opts.EnvoyService, "/"); ok {
		key = client.ObjectKey{Namespace: ns, Name: name}
	}
	svc := &corev1.Service{}
	err := w.client.Get(ctx, key, svc)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	ip, hostname := gatewayv1.IPAddressType, gatewayv1.HostnameAddressType
	var out []gatewayv1.GatewayStatusAddress
	for _, in := range svc.Status.LoadBalancer.Ingress {
		if in.IP != "" {
			out = append(out, gatewayv1.GatewayStatusAddress{Type: &ip, Value: in.IP})
		}
		if in.Hostname != "" {
			out = append(out, gatewayv1.GatewayStatusAddress{Type: &hostname, Value: in.Hostname})
		}
	}
	if len(out) == 0 && svc.Spec.Type != corev1.ServiceTypeLoadBalancer {
		for _, e := range svc.Spec.ExternalIPs {
			out = append(out, gatewayv1.GatewayStatusAddress{Type: &ip, Value: e})
		}
	}
	if len(out) == 0 && svc.Spec.Type != corev1.ServiceTypeLoadBalancer {
		for _, c := range svc.Spec.ClusterIPs {
			if c != "" && c != corev1.ClusterIPNone {
				out = append(out, gatewayv1.GatewayStatusAddress{Type: &ip, Value: c})
			}
		}
	}
	return out, nil
}
