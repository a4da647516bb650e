// Package rollout orders how a running fleet takes new images, as the
// design Isobar follows asks of an upgrade: the controller first, since it
// must understand the Envoys it serves, then the Envoys once every new
// controller pod is Ready (its readiness is its first configuration
// translated and its xDS port open); and a bounded number of fleets at
// once, so that a bad release stops at the first fleets it reaches. A
// rollback is the same change in the other direction.
//
// What a fleet is doing is read from the cluster (the controller
// Deployment carries Label while its fleet rolls), so an operator that
// restarts mid-upgrade, as an upgraded operator does, carries on where
// the old one stopped.
package rollout

import (
	"fmt"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Label marks the controller Deployment of a fleet that rolls; PoolAnnotation
// names the pool it counts in.
const (
	Label          = "isobar.dev/rolling-out"
	PoolAnnotation = "isobar.dev/rollout-pool"
)

// Step is where a fleet's rollout stands.
type Step int

const (
	// Steady: no new images to roll; everything is applied as rendered.
	Steady Step = iota
	// Queued: the pool's other fleets roll; both workloads keep their
	// images.
	Queued
	// Controller: the controller rolls; the Envoys keep their images.
	Controller
	// Envoy: the controller is Ready on its new images; the Envoys roll.
	Envoy
	// Done: both rolled; the fleet leaves the pool.
	Done
)

// Input is a fleet as rendered and as the cluster holds it.
type Input struct {
	// Controller and Envoy are the rendered workloads; Envoy is a
	// DaemonSet or a Deployment.
	Controller *appsv1.Deployment
	Envoy      client.Object
	// LiveController and LiveEnvoy are what the cluster holds, nil when
	// it holds none (LiveEnvoy of either kind).
	LiveController *appsv1.Deployment
	LiveEnvoy      client.Object
	// Slot asks the fleet's pool for a place among the fleets rolling;
	// when there is none it returns the fleets that hold them.
	Slot func() (ok bool, holders []string)
}

// Decision is what to apply now and what to say of it.
type Decision struct {
	Step Step
	// HoldController and HoldEnvoy keep the live workload as it is.
	HoldController, HoldEnvoy bool
	// Message says what the fleet waits for; Stuck is set when the new
	// controller missed its progress deadline.
	Message string
	Stuck   bool
}

// Decide orders one fleet's rollout. A fleet that has no controller or no
// Envoy workload yet has nothing to order: it is created as rendered.
func Decide(in Input) Decision {
	if in.LiveController == nil || in.LiveEnvoy == nil {
		return Decision{Step: Steady}
	}
	liveEnvoy, _ := template(in.LiveEnvoy)
	envoy, _ := template(in.Envoy)
	controllerChanges := !slices.Equal(Images(in.LiveController.Spec.Template), Images(in.Controller.Spec.Template))
	envoyChanges := !slices.Equal(Images(liveEnvoy), Images(envoy))
	if !controllerChanges && !envoyChanges && in.LiveController.Labels[Label] == "" {
		return Decision{Step: Steady}
	}
	if ok, holders := in.Slot(); !ok {
		return Decision{Step: Queued, HoldController: true, HoldEnvoy: true,
			Message: fmt.Sprintf("new images wait until %s, rolling now, finish%s", strings.Join(holders, ", "), plural(len(holders)))}
	}
	kind := kindOf(in.LiveEnvoy)
	if controllerChanges {
		return Decision{Step: Controller, HoldEnvoy: true,
			Message: fmt.Sprintf("controller Deployment %s rolls to %s; the Envoy %s keeps %s until it is Ready", in.Controller.Name, strings.Join(Images(in.Controller.Spec.Template), ", "), kind, strings.Join(Images(liveEnvoy), ", "))}
	}
	if done, why, stuck := DeploymentRolledOut(in.LiveController); !done {
		return Decision{Step: Controller, HoldEnvoy: true, Stuck: stuck,
			Message: fmt.Sprintf("controller Deployment %s: %s; the Envoy %s keeps %s until it is Ready", in.Controller.Name, why, kind, strings.Join(Images(liveEnvoy), ", "))}
	}
	if envoyChanges {
		return Decision{Step: Envoy, Message: fmt.Sprintf("the controller is Ready; the Envoy %s %s rolls to %s", kind, in.Envoy.GetName(), strings.Join(Images(envoy), ", "))}
	}
	if done, why := rolledOut(in.LiveEnvoy); !done {
		return Decision{Step: Envoy, Message: fmt.Sprintf("the controller is Ready; Envoy %s %s: %s", kind, in.Envoy.GetName(), why)}
	}
	return Decision{Step: Done}
}

func plural(n int) string {
	if n == 1 {
		return "es"
	}
	return ""
}

// Images are the images a pod template runs, init containers first: what
// a release changes.
func Images(t corev1.PodTemplateSpec) []string {
	var out []string
	for _, list := range [][]corev1.Container{t.Spec.InitContainers, t.Spec.Containers} {
		for _, c := range list {
			out = append(out, c.Image)
		}
	}
	return out
}

func template(o client.Object) (corev1.PodTemplateSpec, bool) {
	switch w := o.(type) {
	case *appsv1.Deployment:
		return w.Spec.Template, true
	case *appsv1.DaemonSet:
		return w.Spec.Template, true
	}
	return corev1.PodTemplateSpec{}, false
}

func kindOf(o client.Object) string {
	if _, ok := o.(*appsv1.DaemonSet); ok {
		return "DaemonSet"
	}
	return "Deployment"
}

func rolledOut(o client.Object) (bool, string) {
	switch w := o.(type) {
	case *appsv1.Deployment:
		done, why, _ := DeploymentRolledOut(w)
		return done, why
	case *appsv1.DaemonSet:
		return DaemonSetRolledOut(w)
	}
	return true, ""
}

// DeploymentRolledOut reports, as kubectl rollout status does, whether a
// Deployment runs only pods of its current template, all of them
// available; and if not, why, and whether it gave up (its progress
// deadline passed).
func DeploymentRolledOut(d *appsv1.Deployment) (done bool, why string, stuck bool) {
	if d.Status.ObservedGeneration < d.Generation {
		return false, "the new template is not yet observed", false
	}
	for _, c := range d.Status.Conditions {
		if c.Type == appsv1.DeploymentProgressing && c.Status == corev1.ConditionFalse && c.Reason == "ProgressDeadlineExceeded" {
			return false, fmt.Sprintf("%s (%d of %d new pods available)", c.Message, d.Status.AvailableReplicas, d.Status.UpdatedReplicas), true
		}
	}
	want := ptr.Deref(d.Spec.Replicas, 1)
	switch {
	case d.Status.UpdatedReplicas < want:
		return false, fmt.Sprintf("%d of %d pods updated", d.Status.UpdatedReplicas, want), false
	case d.Status.Replicas > d.Status.UpdatedReplicas:
		return false, fmt.Sprintf("%d old pods still run", d.Status.Replicas-d.Status.UpdatedReplicas), false
	case d.Status.AvailableReplicas < d.Status.UpdatedReplicas:
		return false, fmt.Sprintf("%d of %d new pods Ready", d.Status.AvailableReplicas, d.Status.UpdatedReplicas), false
	}
	return true, "", false
}

// DaemonSetRolledOut reports, as kubectl rollout status does, whether a
// DaemonSet runs its current template on every node it should, all
// available; and if not, why.
func DaemonSetRolledOut(ds *appsv1.DaemonSet) (bool, string) {
	s := ds.Status
	switch {
	case s.ObservedGeneration < ds.Generation:
		return false, "the new template is not yet observed"
	case s.UpdatedNumberScheduled < s.DesiredNumberScheduled:
		return false, fmt.Sprintf("%d of %d pods updated", s.UpdatedNumberScheduled, s.DesiredNumberScheduled)
	case s.NumberAvailable < s.DesiredNumberScheduled:
		return false, fmt.Sprintf("%d of %d pods Ready", s.NumberAvailable, s.DesiredNumberScheduled)
	}
	return true, ""
}
