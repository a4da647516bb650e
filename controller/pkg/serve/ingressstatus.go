package serve

import (
	"context"
	"net"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"isobar.dev/controller/pkg/translate/ingresses"
)

// writeIngresses writes the load balancer status of the Ingresses the
// served Gateway serves (the Gateway's addresses; none while the Gateway
// lacks the Ingress listeners), clears it on those it served before and no
// longer does, and tells each Ingress's problems in a
// Warning Event when they change: an Ingress has no conditions.
func (w *statusWriter) writeIngresses(ctx context.Context, desired map[types.NamespacedName]*ingresses.Status, addresses []gatewayv1.GatewayStatusAddress) error {
	lb := loadBalancer(addresses)
	if a := w.opts.IngressStatusAddress; a != "" {
		lb = statusAddress(a)
	}
	for k, is := range desired {
		if is.Gateway != w.gateway {
			continue
		}
		if w.ingresses == nil {
			w.ingresses = map[types.NamespacedName]bool{}
		}
		w.ingresses[k] = true
		status := lb
		if !is.Served {
			status = networkingv1.IngressLoadBalancerStatus{}
		}
		if err := w.writeIngress(ctx, k, status); err != nil {
			return err
		}
		w.tell(ctx, k, is.Problems)
	}
	for k := range w.ingresses {
		if is, ok := desired[k]; ok && is.Gateway == w.gateway {
			continue
		}
		if err := w.writeIngress(ctx, k, networkingv1.IngressLoadBalancerStatus{}); err != nil {
			return err
		}
		delete(w.ingresses, k)
		delete(w.told, k)
	}
	return nil
}

// loadBalancer is the Gateway's addresses as an Ingress's.
func loadBalancer(addresses []gatewayv1.GatewayStatusAddress) networkingv1.IngressLoadBalancerStatus {
	var out networkingv1.IngressLoadBalancerStatus
	for _, a := range addresses {
		if a.Type != nil && *a.Type == gatewayv1.HostnameAddressType {
			out.Ingress = append(out.Ingress, networkingv1.IngressLoadBalancerIngress{Hostname: a.Value})
		} else {
			out.Ingress = append(out.Ingress, networkingv1.IngressLoadBalancerIngress{IP: a.Value})
		}
	}
	return out
}

// statusAddress is the profile's address for Ingresses: an IP address,
// else a host name.
func statusAddress(a string) networkingv1.IngressLoadBalancerStatus {
	if net.ParseIP(a) != nil {
		return networkingv1.IngressLoadBalancerStatus{Ingress: []networkingv1.IngressLoadBalancerIngress{{IP: a}}}
	}
	return networkingv1.IngressLoadBalancerStatus{Ingress: []networkingv1.IngressLoadBalancerIngress{{Hostname: a}}}
}

func (w *statusWriter) writeIngress(ctx context.Context, name types.NamespacedName, lb networkingv1.IngressLoadBalancerStatus) error {
	return w.retry(func(reader client.Reader) error {
		ing := &networkingv1.Ingress{}
		if err := reader.Get(ctx, name, ing); err != nil {
			return client.IgnoreNotFound(err)
		}
		if apiequality.Semantic.DeepEqual(ing.Status.LoadBalancer, lb) || len(ing.Status.LoadBalancer.Ingress) == 0 && len(lb.Ingress) == 0 {
			return nil
		}
		ing.Status.LoadBalancer = lb
		return w.update(ctx, ing, "Ingress")
	})
}

// tell records an Ingress's problems in one Warning Event when they differ
// from the last told.
func (w *statusWriter) tell(ctx context.Context, name types.NamespacedName, problems []string) {
	msg := strings.Join(slices.Sorted(slices.Values(problems)), "; ")
	if w.told[name] == msg || w.events == nil {
		return
	}
	if w.told == nil {
		w.told = map[types.NamespacedName]string{}
	}
	w.told[name] = msg
	if msg == "" {
		return
	}
	ing := &networkingv1.Ingress{}
	if err := w.client.Get(ctx, name, ing); err != nil {
		return
	}
	w.events.Eventf(ing, nil, corev1.EventTypeWarning, "Invalid", "Translate", "Gateway %s cannot serve all of this Ingress: %s", w.gateway, msg)
}
