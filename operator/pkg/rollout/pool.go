package rollout

import (
	"context"
	"fmt"
	"slices"
	"sync"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Pool bounds the fleets that roll at once, per pool (a GatewayClass). The
// cluster says which fleets roll (their controller Deployments carry
// Label); the Pool adds those it let go that the cache may not show yet,
// so that two reconciles in a row cannot both take the last place.
type Pool struct {
	mu   sync.Mutex
	held map[string]map[string]bool // pool -> fleet
}

// Acquire lets fleet roll in pool when it already does or fewer than
// limit others do; otherwise it returns those that do.
func (p *Pool) Acquire(pool, fleet string, limit int, rolling []string) (bool, []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	set := map[string]bool{}
	for _, f := range rolling {
		set[f] = true
	}
	for f := range p.held[pool] {
		set[f] = true
	}
	if set[fleet] {
		return true, nil
	}
	if len(set) < max(limit, 1) {
		if p.held == nil {
			p.held = map[string]map[string]bool{}
		}
		if p.held[pool] == nil {
			p.held[pool] = map[string]bool{}
		}
		p.held[pool][fleet] = true
		return true, nil
	}
	holders := make([]string, 0, len(set))
	for f := range set {
		holders = append(holders, f)
	}
	slices.Sort(holders)
	return false, holders
}

// Release gives fleet's place back, in whichever pool it held one: it
// finished, or went away.
func (p *Pool) Release(fleet string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, held := range p.held {
		delete(held, fleet)
	}
}

// Rolling are the fleets of pool whose controller Deployments carry
// Label, each named by the namespace and name of its owner (a Gateway, or
// a static ContourDeployment).
func Rolling(ctx context.Context, c client.Reader, pool string) ([]string, error) {
	var list appsv1.DeploymentList
	if err := c.List(ctx, &list, client.HasLabels{Label}); err != nil {
		return nil, fmt.Errorf("listing rolling fleets: %w", err)
	}
	var out []string
	for _, d := range list.Items {
		if d.Annotations[PoolAnnotation] != pool {
			continue
		}
		if owner := metav1.GetControllerOf(&d); owner != nil {
			out = append(out, FleetName(d.Namespace, owner.Name))
		}
	}
	return out, nil
}

// FleetName names a fleet by its owner.
func FleetName(namespace, owner string) string {
	return types.NamespacedName{Namespace: namespace, Name: owner}.String()
}

// Live reads the fleet's controller Deployment and its Envoy workload, of
// either kind, as the cluster holds them; nil for those it does not.
func Live(ctx context.Context, c client.Reader, namespace, controller, envoy string) (*appsv1.Deployment, client.Object, error) {
	dep := &appsv1.Deployment{}
	if err := c.Get(ctx, types.NamespacedName{Namespace: namespace, Name: controller}, dep); err != nil {
		if !apierrors.IsNotFound(err) {
			return nil, nil, fmt.Errorf("reading controller Deployment %s: %w", controller, err)
		}
		dep = nil
	}
	for _, o := range []client.Object{&appsv1.DaemonSet{}, &appsv1.Deployment{}} {
		err := c.Get(ctx, types.NamespacedName{Namespace: namespace, Name: envoy}, o)
		if err == nil {
			return dep, o, nil
		}
		if !apierrors.IsNotFound(err) {
			return nil, nil, fmt.Errorf("reading Envoy workload %s: %w", envoy, err)
		}
	}
	return dep, nil, nil
}
