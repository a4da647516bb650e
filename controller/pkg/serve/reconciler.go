package serve

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"isobar.dev/controller/pkg/gatewayapi"
	"isobar.dev/controller/pkg/xds"
	"isobar.dev/controller/pkg/xdsserver"
)

// reconciler translates the Gateway and everything attached to it, pushes
// the result to Envoy and writes status. It runs on every replica; only the
// elected one writes status.
type reconciler struct {
	opts    Options
	client  client.Client
	snap    *snapshotter
	stage1  *gatewayapi.Translator
	stage2  *xds.Translator
	xds     *xdsserver.Server
	elected func() bool
	ready   atomic.Bool
	written statusCache
}

func (r *reconciler) Reconcile(ctx context.Context, _ ctrl.Request) (ctrl.Result, error) {
	log := ctrl.LoggerFrom(ctx)
	// Let a burst of changes settle into one translation; changes that
	// arrive meanwhile mark the Gateway for one more pass, not many.
	if r.opts.UpdateDelay > 0 {
		time.Sleep(r.opts.UpdateDelay)
	}
	res, err := r.snap.snapshot(ctx)
	if err != nil {
		return ctrl.Result{}, err
	}
	start := time.Now()
	result := r.stage1.Translate(res)
	if len(result.Gateways) == 0 {
		log.Info("Gateway not found; nothing to serve", "gateway", r.opts.Gateway.String())
		return ctrl.Result{}, nil
	}
	resources, err := r.stage2.Translate(result.Gateways[0])
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("translating to Envoy configuration: %w", err)
	}
	translationSeconds.Observe(time.Since(start).Seconds())
	changed, err := r.xds.Update(resources)
	if err != nil {
		return ctrl.Result{}, err
	}
	r.ready.Store(true)
	if changed > 0 {
		log.V(1).Info("pushed configuration", "changed", changed)
	}
	if !r.elected() {
		return ctrl.Result{}, nil
	}
	addresses, err := r.addresses(ctx)
	if err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{}, r.writeStatus(ctx, result.Status, r.xds.Status(), addresses)
}

// addresses are the Envoy Service's: its load balancer's, else its cluster
// IPs.
func (r *reconciler) addresses(ctx context.Context) ([]gatewayv1.GatewayStatusAddress, error) {
	if r.opts.EnvoyService == "" {
		return nil, nil
	}
	svc := &corev1.Service{}
	err := r.client.Get(ctx, client.ObjectKey{Namespace: r.opts.Gateway.Namespace, Name: r.opts.EnvoyService}, svc)
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
		for _, c := range svc.Spec.ClusterIPs {
			if c != "" && c != corev1.ClusterIPNone {
				out = append(out, gatewayv1.GatewayStatusAddress{Type: &ip, Value: c})
			}
		}
	}
	return out, nil
}
