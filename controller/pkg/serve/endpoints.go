package serve

import (
	"context"
	"maps"
	"slices"
	"strings"
	"time"

	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"isobar.dev/controller/pkg/gatewayapi"
	"isobar.dev/controller/pkg/ir"
	"isobar.dev/controller/pkg/translate"
	"isobar.dev/controller/pkg/xds"
)

// endpointsPrefix marks a work item as "the EndpointSlices of this Service
// changed". No Gateway can be named so: names are DNS subdomains.
const endpointsPrefix = "endpointslices:"

// endpointsRequest is the work item for an EndpointSlice's Service; a slice
// without a Service label feeds no cluster and asks for nothing.
func endpointsRequest(_ context.Context, o client.Object) []reconcile.Request {
	svc := o.GetLabels()[discoveryv1.LabelServiceName]
	if svc == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: endpointsPrefix + svc}}}
}

// clustersByService indexes the last full translation's clusters by the
// Services they come from: a cluster with shares under each share's.
func clustersByService(clusters []*ir.Cluster) map[types.NamespacedName][]*ir.Cluster {
	out := map[types.NamespacedName][]*ir.Cluster{}
	for _, c := range clusters {
		if c.DNS {
			continue // Envoy resolves its endpoints
		}
		if len(c.Shares) == 0 {
			k := types.NamespacedName{Namespace: c.Source.Namespace, Name: c.Source.Service}
			out[k] = append(out[k], c)
			continue
		}
		for _, sh := range c.Shares {
			k := types.NamespacedName{Namespace: sh.Source.Namespace, Name: sh.Source.Service}
			if !slices.Contains(out[k], c) {
				out[k] = append(out[k], c)
			}
		}
	}
	return out
}

// reconcileEndpoints is the fast path for EndpointSlice changes: it
// recomputes the ClusterLoadAssignments of the clusters fed by one Service
// and pushes those alone, leaving listeners, routes and clusters untouched.
// Slices of Services no route uses cost a map lookup.
func (r *reconciler) reconcileEndpoints(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	svc := types.NamespacedName{Namespace: req.Namespace, Name: strings.TrimPrefix(req.Name, endpointsPrefix)}
	clusters := r.clusters[svc]
	if len(clusters) == 0 {
		return ctrl.Result{}, nil
	}
	// Each Service's slices are listed once, however many of its ports
	// and shared clusters use them.
	listed := map[types.NamespacedName][]*discoveryv1.EndpointSlice{}
	endpoints := func(src ir.ClusterSource) ([]ir.Endpoint, error) {
		k := types.NamespacedName{Namespace: src.Namespace, Name: src.Service}
		sl, ok := listed[k]
		if !ok {
			var err error
			if sl, err = r.endpointSlices(ctx, k); err != nil {
				return nil, err
			}
			listed[k] = sl
		}
		return gatewayapi.Endpoints(src, sl), nil
	}
	loadAssignments := make([]*endpointv3.ClusterLoadAssignment, 0, len(clusters))
	for _, c := range clusters {
		next := *c
		if len(c.Shares) == 0 {
			eps, err := endpoints(c.Source)
			if err != nil {
				return ctrl.Result{}, err
			}
			next.Endpoints = eps
		}
		// A cluster with shares is recomputed whole, from every share's
		// Service, so that nothing of an earlier fast path is kept.
		next.Shares = slices.Clone(c.Shares)
		for i, sh := range next.Shares {
			eps, err := endpoints(sh.Source)
			if err != nil {
				return ctrl.Result{}, err
			}
			next.Shares[i].Endpoints = eps
		}
		loadAssignments = append(loadAssignments, xds.LoadAssignment(&next))
	}
	changed, err := r.xds.UpdateEndpoints(loadAssignments)
	if err != nil {
		return ctrl.Result{}, err
	}
	if changed > 0 {
		endpointPushes.Inc()
		ctrl.LoggerFrom(ctx).V(1).Info("pushed endpoints", "service", svc.String(), "changed", changed)
	}
	return ctrl.Result{}, nil
}

// endpointSlices are a Service's EndpointSlices as the watch holds them now.
func (r *reconciler) endpointSlices(_ context.Context, svc types.NamespacedName) ([]*discoveryv1.EndpointSlice, error) {
	return r.endpoints.Of(svc)
}

// endpointWait bounds how long a pass waits for the first listing of a
// namespace's EndpointSlices; past it, the clusters go out without
// endpoints and the slices follow through the fast path.
const endpointWait = 10 * time.Second

// endpointWaitFor is how long this pass may wait for slices. Until the
// first configuration is in the xDS cache the xDS port is closed and the
// fleet keeps serving what it had (a controller restarted under a running
// fleet, such as by an upgrade); clusters without endpoints pushed then
// would send every reconnecting Envoy from working endpoints to none. So
// the first pass waits as long as the caches' first listing may take.
func (r *reconciler) endpointWaitFor() time.Duration {
	if r.ready.Load() {
		return endpointWait
	}
	return cacheSyncTimeout
}

// backendServices are the Services, by namespace (names sorted), the
// translated Gateway's clusters come from: those whose EndpointSlices it
// needs.
func backendServices(result *translate.Result) map[string][]string {
	seen := map[types.NamespacedName]bool{}
	for _, gw := range result.Gateways {
		for _, c := range gw.Clusters {
			if len(c.Shares) == 0 && c.Source.Namespace != "" {
				seen[types.NamespacedName{Namespace: c.Source.Namespace, Name: c.Source.Service}] = true
			}
			for _, sh := range c.Shares {
				seen[types.NamespacedName{Namespace: sh.Source.Namespace, Name: sh.Source.Service}] = true
			}
		}
	}
	out := map[string][]string{}
	for _, k := range slices.SortedFunc(maps.Keys(seen), func(a, b types.NamespacedName) int { return strings.Compare(a.String(), b.String()) }) {
		out[k.Namespace] = append(out[k.Namespace], k.Name)
	}
	return out
}
