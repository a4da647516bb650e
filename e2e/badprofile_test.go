package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"isobar.dev/api/v1alpha1"
	"isobar.dev/e2e/harness"
	"isobar.dev/operator/pkg/render"
)

// profileAccepted waits for a ContourDeployment's Accepted condition.
func profileAccepted(t *testing.T, ctx context.Context, ns, name string, status metav1.ConditionStatus, message string) {
	t.Helper()
	var last *metav1.Condition
	defer func() {
		if t.Failed() && last != nil {
			t.Logf("%s: last Accepted %s: %s", name, last.Status, last.Message)
		}
	}()
	eventually(t, 30*time.Second, "ContourDeployment "+name+" Accepted "+string(status)+" "+message, func() bool {
		cd := &v1alpha1.ContourDeployment{}
		if err := env.Client.Get(ctx, keyOf(ns, name), cd); err != nil {
			t.Fatal(err)
		}
		last = meta.FindStatusCondition(cd.Status.Conditions, v1alpha1.ConditionAccepted)
		return last != nil && last.Status == status && last.ObservedGeneration == cd.Generation && strings.Contains(last.Message, message)
	})
	t.Logf("%s: %s", name, last.Message)
}

// Profiles the schema admits but whose fleets the API server refuses are
// found by the operator's dry run and reported on the profile; so are
// images of releases Isobar cannot run with.
func TestProfileDryRun(t *testing.T) {
	ns := namespace(t)
	ctx, cancel := harness.Context()
	defer cancel()
	operator(t, "isobar.dev/dry-"+ns)
	for _, tc := range []struct {
		name, spec, want string
	}{
		{"annotation-key", "envoy: {podAnnotations: {'bad key': v}}", "annotations: Invalid value: \"bad key\""},
		{"label-key", "controller: {podLabels: {'my team': web}}", "labels: Invalid value: \"my team\""},
		{"service-annotation-key", "envoy: {networkPublishing: {serviceAnnotations: {'-lb': v}}}", "annotations: Invalid value: \"-lb\""},
		{"node-port-range", "envoy: {networkPublishing: {type: NodePortService, nodePorts: [{port: 80, nodePort: 20000}]}}", "nodePorts[0].nodePort 20000 is outside the cluster's node port range 30000-32767"},
		{"old-envoy", "envoy: {image: 'docker.io/envoyproxy/envoy:distroless-v1.31.2'}", "is Envoy v1.31.2, older than the oldest Envoy Isobar supports, v1.37"},
		{"other-controller", "controller: {image: 'ghcr.io/isobar-dev/isobar-controller:v0.0.9'}", "the operator and the controller must be of one release"},
	} {
		if err := createProfile(t, ns, tc.name, tc.spec); err != nil {
			t.Fatalf("%s: the schema refused %s: %v", tc.name, tc.spec, err)
		}
		profileAccepted(t, ctx, ns, tc.name, metav1.ConditionFalse, tc.want)
	}
	if err := createProfile(t, ns, "good", "envoy: {podAnnotations: {example.com/team: web}, networkPublishing: {type: NodePortService, nodePorts: [{port: 80, nodePort: 30780}]}}"); err != nil {
		t.Fatal(err)
	}
	profileAccepted(t, ctx, ns, "good", metav1.ConditionTrue, "")
}

// A Gateway whose profile turns bad keeps the fleet it has: nothing is
// applied, Provisioned says why and a Warning Event is recorded. Fixed,
// the fleet follows again. A new Gateway on the bad profile gets no fleet
// and is not Accepted.
func TestProfileTurnsBad(t *testing.T) {
	ns := namespace(t)
	ctx, cancel := harness.Context()
	defer cancel()
	controller := "isobar.dev/bad-" + ns
	operator(t, controller)
	if err := createProfile(t, ns, "profile", "envoy: {podAnnotations: {example.com/team: web}}"); err != nil {
		t.Fatal(err)
	}
	class := &gatewayv1.GatewayClass{ObjectMeta: metav1.ObjectMeta{Name: "bad-" + ns}, Spec: gatewayv1.GatewayClassSpec{
		ControllerName: gatewayv1.GatewayController(controller),
		ParametersRef:  &gatewayv1.ParametersReference{Group: "isobar.dev", Kind: "ContourDeployment", Namespace: (*gatewayv1.Namespace)(&ns), Name: "profile"},
	}}
	gw := &gatewayv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}, Spec: gatewayv1.GatewaySpec{
		GatewayClassName: gatewayv1.ObjectName(class.Name),
		Listeners:        []gatewayv1.Listener{{Name: "http", Protocol: gatewayv1.HTTPProtocolType, Port: 80}},
	}}
	create(t, ctx, class, gw)
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), class) })
	n := render.NamesOf(gw)
	waitGatewayCondition(t, ctx, ns, "web", "isobar.dev/Provisioned", metav1.ConditionTrue, "Provisioned", n.Envoy)
	ds, dep := &appsv1.DaemonSet{}, &appsv1.Deployment{}
	if err := env.Client.Get(ctx, keyOf(ns, n.Envoy), ds); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Get(ctx, keyOf(ns, n.Controller), dep); err != nil {
		t.Fatal(err)
	}

	// The profile turns bad in a way only the API server sees; the
	// control plane's settings change too, so a half-applied fleet would
	// show in the controller Deployment.
	setProfile(t, ctx, ns, func(cd *v1alpha1.ContourDeployment) {
		cd.Spec.Envoy.PodAnnotations = map[string]string{"bad key": "v"}
		cd.Spec.Controller.LogLevel = v1alpha1.ControllerLogDebug
	})
	profileAccepted(t, ctx, ns, "profile", metav1.ConditionFalse, "annotations: Invalid value")
	waitGatewayCondition(t, ctx, ns, "web", "isobar.dev/Provisioned", metav1.ConditionFalse, "InvalidParameters", "keeps running as last provisioned")
	if c := meta.FindStatusCondition(gatewayOf(t, ctx, ns).Status.Conditions, "Accepted"); c != nil && c.Status == metav1.ConditionFalse {
		t.Errorf("the running Gateway was marked not Accepted: %v", c)
	}
	eventually(t, 30*time.Second, "a Warning Event on the Gateway", func() bool {
		var evs eventsv1.EventList
		if err := env.Client.List(ctx, &evs, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		for _, e := range evs.Items {
			if e.Regarding.Name == "web" && e.Type == "Warning" && e.Reason == "InvalidParameters" && strings.Contains(e.Note, "annotations: Invalid value") {
				return true
			}
		}
		return false
	})
	ds2, dep2 := &appsv1.DaemonSet{}, &appsv1.Deployment{}
	if err := env.Client.Get(ctx, keyOf(ns, n.Envoy), ds2); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Get(ctx, keyOf(ns, n.Controller), dep2); err != nil {
		t.Fatal(err)
	}
	if ds2.Generation != ds.Generation || dep2.Generation != dep.Generation {
		t.Errorf("the running fleet changed: Envoy generation %d -> %d, controller %d -> %d", ds.Generation, ds2.Generation, dep.Generation, dep2.Generation)
	}

	// A new Gateway on the bad profile: no fleet, not Accepted.
	fresh := &gatewayv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "fresh"}, Spec: gw.Spec}
	create(t, ctx, fresh)
	waitGatewayCondition(t, ctx, ns, "fresh", "Accepted", metav1.ConditionFalse, "InvalidParameters", "the API server refuses the fleet")
	if !apierrors.IsNotFound(env.Client.Get(ctx, keyOf(ns, render.NamesOf(fresh).Controller), &appsv1.Deployment{})) {
		t.Error("the Gateway on a refused profile got a controller")
	}

	// Fixed: both fleets follow the profile.
	setProfile(t, ctx, ns, func(cd *v1alpha1.ContourDeployment) {
		cd.Spec.Envoy.PodAnnotations = map[string]string{"example.com/team": "web"}
	})
	profileAccepted(t, ctx, ns, "profile", metav1.ConditionTrue, "")
	waitGatewayCondition(t, ctx, ns, "web", "isobar.dev/Provisioned", metav1.ConditionTrue, "Provisioned", n.Envoy)
	waitGatewayCondition(t, ctx, ns, "fresh", "isobar.dev/Provisioned", metav1.ConditionTrue, "Provisioned", "")
	if err := env.Client.Get(ctx, keyOf(ns, n.Controller), dep2); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(dep2.Spec.Template.Spec.Containers[0].Args, " "), "--log-level=debug") {
		t.Errorf("the fixed profile's log level did not reach the controller: %v", dep2.Spec.Template.Spec.Containers[0].Args)
	}
}

func setProfile(t *testing.T, ctx context.Context, ns string, edit func(*v1alpha1.ContourDeployment)) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		cd := &v1alpha1.ContourDeployment{}
		if err := env.Client.Get(ctx, keyOf(ns, "profile"), cd); err != nil {
			return err
		}
		edit(cd)
		return env.Client.Update(ctx, cd)
	})
	if err != nil {
		t.Fatal(err)
	}
}
