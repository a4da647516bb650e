package rollout

import (
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func controller(image string, mod ...func(*appsv1.Deployment)) *appsv1.Deployment {
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web-controller", Generation: 2},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](2), Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "controller", Image: image}},
		}}},
		Status: appsv1.DeploymentStatus{ObservedGeneration: 2, Replicas: 2, UpdatedReplicas: 2, AvailableReplicas: 2, ReadyReplicas: 2},
	}
	for _, m := range mod {
		m(d)
	}
	return d
}

func envoyDS(controllerImage, envoyImage string, mod ...func(*appsv1.DaemonSet)) *appsv1.DaemonSet {
	ds := &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: "web-envoy", Generation: 3},
		Spec: appsv1.DaemonSetSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			InitContainers: []corev1.Container{{Name: "bootstrap", Image: controllerImage}},
			Containers:     []corev1.Container{{Name: "envoy", Image: envoyImage}},
		}}},
		Status: appsv1.DaemonSetStatus{ObservedGeneration: 3, DesiredNumberScheduled: 3, UpdatedNumberScheduled: 3, NumberAvailable: 3, NumberReady: 3},
	}
	for _, m := range mod {
		m(ds)
	}
	return ds
}

func TestDecide(t *testing.T) {
	free := func() (bool, []string) { return true, nil }
	taken := func() (bool, []string) { return false, []string{"ns/other"} }
	const a, b, e1, e2 = "isobar-controller:a", "isobar-controller:b", "envoy:v1.40.0", "envoy:v1.40.1"
	for _, tc := range []struct {
		name string
		in   Input
		want Step
		// holdController and holdEnvoy are what the decision holds;
		// message is a part of what it says.
		holdController, holdEnvoy, stuck bool
		message                          string
	}{{
		name: "a new fleet is created as rendered",
		in:   Input{Controller: controller(b), Envoy: envoyDS(b, e1), Slot: taken},
		want: Steady,
	}, {
		name: "a fleet without its Envoy workload gets it at once",
		in:   Input{Controller: controller(b), Envoy: envoyDS(b, e1), LiveController: controller(a), Slot: taken},
		want: Steady,
	}, {
		name: "no new images: steady, whatever the pool",
		in:   Input{Controller: controller(a), Envoy: envoyDS(a, e1), LiveController: controller(a), LiveEnvoy: envoyDS(a, e1), Slot: taken},
		want: Steady,
	}, {
		name: "steady while the controller's pods are not ready, when nothing rolls",
		in: Input{Controller: controller(a), Envoy: envoyDS(a, e1), LiveController: controller(a, func(d *appsv1.Deployment) { d.Status.AvailableReplicas = 0 }),
			LiveEnvoy: envoyDS(a, e1), Slot: taken},
		want: Steady,
	}, {
		name: "new images, the pool full: both wait",
		in:   Input{Controller: controller(b), Envoy: envoyDS(b, e1), LiveController: controller(a), LiveEnvoy: envoyDS(a, e1), Slot: taken},
		want: Queued, holdController: true, holdEnvoy: true, message: "ns/other",
	}, {
		name: "new images: the controller rolls, the Envoys keep theirs",
		in:   Input{Controller: controller(b), Envoy: envoyDS(b, e1), LiveController: controller(a), LiveEnvoy: envoyDS(a, e1), Slot: free},
		want: Controller, holdEnvoy: true, message: "keeps isobar-controller:a, envoy:v1.40.0",
	}, {
		name: "the new controller not yet observed",
		in: Input{Controller: controller(b), Envoy: envoyDS(b, e1), LiveController: controller(b, func(d *appsv1.Deployment) { d.Status.ObservedGeneration = 1 }),
			LiveEnvoy: envoyDS(a, e1), Slot: free},
		want: Controller, holdEnvoy: true, message: "not yet observed",
	}, {
		name: "old controller pods still run",
		in: Input{Controller: controller(b), Envoy: envoyDS(b, e1), LiveController: controller(b, func(d *appsv1.Deployment) { d.Status.Replicas = 3 }),
			LiveEnvoy: envoyDS(a, e1), Slot: free},
		want: Controller, holdEnvoy: true, message: "1 old pods still run",
	}, {
		name: "new controller pods not Ready",
		in: Input{Controller: controller(b), Envoy: envoyDS(b, e1), LiveController: controller(b, func(d *appsv1.Deployment) { d.Status.AvailableReplicas = 1 }),
			LiveEnvoy: envoyDS(a, e1), Slot: free},
		want: Controller, holdEnvoy: true, message: "1 of 2 new pods Ready",
	}, {
		name: "the new controller missed its deadline: stuck, the Envoys kept",
		in: Input{Controller: controller(b), Envoy: envoyDS(b, e1), LiveController: controller(b, func(d *appsv1.Deployment) {
			d.Status.AvailableReplicas = 0
			d.Status.Conditions = []appsv1.DeploymentCondition{{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionFalse, Reason: "ProgressDeadlineExceeded", Message: `ReplicaSet "web-controller-b" has timed out progressing.`}}
		}), LiveEnvoy: envoyDS(a, e1), Slot: free},
		want: Controller, holdEnvoy: true, stuck: true, message: "has timed out progressing",
	}, {
		name: "the controller Ready: the Envoys roll",
		in:   Input{Controller: controller(b), Envoy: envoyDS(b, e1), LiveController: controller(b), LiveEnvoy: envoyDS(a, e1), Slot: free},
		want: Envoy, message: "rolls to isobar-controller:b, envoy:v1.40.0",
	}, {
		name: "an Envoy image alone: the Envoys roll at once",
		in:   Input{Controller: controller(a), Envoy: envoyDS(a, e2), LiveController: controller(a), LiveEnvoy: envoyDS(a, e1), Slot: free},
		want: Envoy,
	}, {
		name: "an Envoy image alone still waits for the pool",
		in:   Input{Controller: controller(a), Envoy: envoyDS(a, e2), LiveController: controller(a), LiveEnvoy: envoyDS(a, e1), Slot: taken},
		want: Queued, holdController: true, holdEnvoy: true,
	}, {
		name: "the Envoys still rolling keep the fleet in the pool",
		in: Input{Controller: controller(b), Envoy: envoyDS(b, e1), LiveController: controller(b, marked),
			LiveEnvoy: envoyDS(b, e1, func(ds *appsv1.DaemonSet) { ds.Status.NumberAvailable = 2 }), Slot: free},
		want: Envoy, message: "2 of 3 pods Ready",
	}, {
		name: "both rolled out: done",
		in:   Input{Controller: controller(b), Envoy: envoyDS(b, e1), LiveController: controller(b, marked), LiveEnvoy: envoyDS(b, e1), Slot: free},
		want: Done,
	}, {
		name: "a rollback is a rollout",
		in:   Input{Controller: controller(a), Envoy: envoyDS(a, e1), LiveController: controller(b, marked), LiveEnvoy: envoyDS(b, e1), Slot: free},
		want: Controller, holdEnvoy: true,
	}, {
		name: "an Envoy Deployment rolls out by its own status",
		in: Input{Controller: controller(b), Envoy: envoyDS(b, e1), LiveController: controller(b, marked),
			LiveEnvoy: controller(b, func(d *appsv1.Deployment) {
				d.Name = "web-envoy"
				d.Spec.Template = envoyDS(b, e1).Spec.Template
				d.Status.UpdatedReplicas = 1
			}), Slot: free},
		want: Envoy, message: "1 of 2 pods updated",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			d := Decide(tc.in)
			if d.Step != tc.want || d.HoldController != tc.holdController || d.HoldEnvoy != tc.holdEnvoy || d.Stuck != tc.stuck {
				t.Errorf("got step %d hold controller %t envoy %t stuck %t (%s), want step %d hold controller %t envoy %t stuck %t",
					d.Step, d.HoldController, d.HoldEnvoy, d.Stuck, d.Message, tc.want, tc.holdController, tc.holdEnvoy, tc.stuck)
			}
			if !strings.Contains(d.Message, tc.message) {
				t.Errorf("message %q does not say %q", d.Message, tc.message)
			}
		})
	}
}

func marked(d *appsv1.Deployment) { d.Labels = map[string]string{Label: "true"} }

func TestPool(t *testing.T) {
	var p Pool
	if ok, _ := p.Acquire("class", "ns/a", 2, nil); !ok {
		t.Fatal("the first fleet of an empty pool waits")
	}
	// The cache does not show ns/a rolling yet; the pool remembers it.
	if ok, _ := p.Acquire("class", "ns/b", 2, nil); !ok {
		t.Fatal("the second fleet of a pool of 2 waits")
	}
	ok, holders := p.Acquire("class", "ns/c", 2, []string{"ns/a"})
	if ok || !slices.Equal(holders, []string{"ns/a", "ns/b"}) {
		t.Fatalf("a third fleet of a pool of 2: got %t, held by %v", ok, holders)
	}
	if ok, _ := p.Acquire("other", "ns/c", 1, nil); !ok {
		t.Fatal("another pool is full")
	}
	if ok, _ := p.Acquire("class", "ns/a", 2, nil); !ok {
		t.Fatal("a fleet that holds a place waits for it")
	}
	p.Release("ns/b")
	if ok, _ := p.Acquire("class", "ns/c", 2, nil); !ok {
		t.Fatal("a released place is not given")
	}
	// A fleet the cluster shows rolling, which this operator never let
	// go (it restarted), holds its place too.
	p.Release("ns/a")
	p.Release("ns/c")
	if ok, holders := p.Acquire("class", "ns/d", 1, []string{"ns/x"}); ok || !slices.Equal(holders, []string{"ns/x"}) {
		t.Fatalf("a fleet rolling before a restart: got %t, held by %v", ok, holders)
	}
}
