package serve

import (
	"context"

	corev1 "k8s.io/api/core/v1"

	contourv1 "github.com/projectcontour/contour/apis/projectcontour/v1"
	contourv1alpha1 "github.com/projectcontour/contour/apis/projectcontour/v1alpha1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"isobar.dev/controller/pkg/translate/httpproxies"
)

// writeHTTPProxies writes the status of the HTTPProxies the served Gateway
// serves, as Contour writes it: currentStatus, description, the Valid
// condition with its errors and warnings, and the Gateway's addresses as
// the load balancer status.
func (w *statusWriter) writeHTTPProxies(ctx context.Context, desired map[types.NamespacedName]*httpproxies.Status, addresses []gatewayv1.GatewayStatusAddress) error {
	var lb corev1.LoadBalancerStatus
	for _, in := range loadBalancer(addresses).Ingress {
		lb.Ingress = append(lb.Ingress, corev1.LoadBalancerIngress{IP: in.IP, Hostname: in.Hostname})
	}
	for k, ps := range desired {
		if ps.Gateway != w.gateway {
			continue
		}
		if err := w.writeHTTPProxy(ctx, k, ps.Status, lb); err != nil {
			return err
		}
	}
	return nil
}

func (w *statusWriter) writeHTTPProxy(ctx context.Context, name types.NamespacedName, desired contourv1.HTTPProxyStatus, lb corev1.LoadBalancerStatus) error {
	return w.retry(func(reader client.Reader) error {
		p := &contourv1.HTTPProxy{}
		if err := reader.Get(ctx, name, p); err != nil {
			return client.IgnoreNotFound(err)
		}
		next := desired
		next.LoadBalancer = lb
		next.Conditions = mergeDetailed(p.Status.Conditions, desired.Conditions)
		if apiequality.Semantic.DeepEqual(&next, &p.Status) {
			return nil
		}
		p.Status = next
		return w.update(ctx, p, "HTTPProxy")
	})
}

// writeExtensionService writes an ExtensionService's status as Contour
// does: its Valid condition.
func (w *statusWriter) writeExtensionService(ctx context.Context, name types.NamespacedName, desired contourv1alpha1.ExtensionServiceStatus) error {
	return w.retry(func(reader client.Reader) error {
		x := &contourv1alpha1.ExtensionService{}
		if err := reader.Get(ctx, name, x); err != nil {
			return client.IgnoreNotFound(err)
		}
		next := desired
		next.Conditions = mergeDetailed(x.Status.Conditions, desired.Conditions)
		if apiequality.Semantic.DeepEqual(&next, &x.Status) {
			return nil
		}
		x.Status = next
		return w.update(ctx, x, "ExtensionService")
	})
}

// mergeDetailed keeps a condition's lastTransitionTime while its status
// stays, and sets it to now when the status changes.
func mergeDetailed(old, desired []contourv1.DetailedCondition) []contourv1.DetailedCondition {
	out := make([]contourv1.DetailedCondition, len(desired))
	now := metav1.Now()
	for i, d := range desired {
		d.LastTransitionTime = now
		for _, o := range old {
			if o.Type == d.Type && o.Status == d.Status {
				d.LastTransitionTime = o.LastTransitionTime
			}
		}
		out[i] = d
	}
	return out
}
