package provision

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"isobar.dev/operator/pkg/render"
	"isobar.dev/operator/pkg/rollout"
)

// Rollout is how a fleet takes new images: the pool it counts in, its name
// there, and how many of the pool's fleets roll at once.
type Rollout struct {
	Pool  *rollout.Pool
	Name  string // the pool: a GatewayClass, or a static ContourDeployment
	Fleet string // rollout.FleetName of the fleet's owner
	Limit int
}

// Order decides how far the fleet f may go towards its rendered images now
// (rollout.Decide), and marks its rendered controller Deployment as rolling
// while it does, so that Fleet applies what the decision allows.
func Order(ctx context.Context, c client.Reader, owner client.Object, f *render.Fleet, ro Rollout) (rollout.Decision, error) {
	controller, envoy := workloads(f)
	liveController, liveEnvoy, err := rollout.Live(ctx, c, owner.GetNamespace(), f.Names.Controller, f.Names.Envoy)
	if err != nil {
		return rollout.Decision{}, err
	}
	d := rollout.Decide(rollout.Input{
		Controller: controller, Envoy: envoy, LiveController: liveController, LiveEnvoy: liveEnvoy,
		Slot: func() (bool, []string) {
			rolling, err2 := rollout.Rolling(ctx, c, ro.Name)
			if err2 != nil {
				err = err2
				return false, nil
			}
			return ro.Pool.Acquire(ro.Name, ro.Fleet, ro.Limit, rolling)
		},
	})
	if err != nil {
		return rollout.Decision{}, err
	}
	switch d.Step {
	case rollout.Controller, rollout.Envoy:
		if controller.Labels == nil {
			controller.Labels = map[string]string{}
		}
		if controller.Annotations == nil {
			controller.Annotations = map[string]string{}
		}
		controller.Labels[rollout.Label] = "true"
		controller.Annotations[rollout.PoolAnnotation] = ro.Name
	case rollout.Done:
		ro.Pool.Release(ro.Fleet)
	}
	return d, nil
}

// workloads are the rendered controller Deployment and Envoy workload.
func workloads(f *render.Fleet) (*appsv1.Deployment, client.Object) {
	var controller *appsv1.Deployment
	var envoy client.Object
	for _, o := range f.Namespaced {
		switch w := o.(type) {
		case *appsv1.Deployment:
			switch w.Name {
			case f.Names.Controller:
				controller = w
			case f.Names.Envoy:
				envoy = w
			}
		case *appsv1.DaemonSet:
			if w.Name == f.Names.Envoy {
				envoy = w
			}
		}
	}
	return controller, envoy
}

// held reports whether Fleet leaves o as the cluster holds it.
func held(f *render.Fleet, d rollout.Decision, o client.Object) bool {
	switch o.(type) {
	case *appsv1.Deployment, *appsv1.DaemonSet:
	default:
		return false
	}
	return (d.HoldController && o.GetName() == f.Names.Controller) || (d.HoldEnvoy && o.GetName() == f.Names.Envoy)
}
