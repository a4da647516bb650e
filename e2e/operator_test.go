package e2e

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"isobar.dev/api/v1alpha1"
	"isobar.dev/e2e/harness"
	"isobar.dev/operator/pkg/certs"
	"isobar.dev/operator/pkg/provision"
	"isobar.dev/operator/pkg/render"
)

// operator runs the built operator for one controllerName until the test
// ends, or until the returned stop is called.
func operator(t *testing.T, controllerName string) (stop func()) {
	t.Helper()
	kubeconfig, err := env.Kubeconfig("isobar-operator")
	if err != nil {
		t.Fatal(err)
	}
	return operatorWith(t, kubeconfig, controllerName)
}

// operatorWith is operator with the given kubeconfig.
func operatorWith(t *testing.T, kubeconfig, controllerName string) (stop func()) {
	t.Helper()
	op, health, stop := startOperatorProcess(t, kubeconfig, controllerName)
	waitReady(t, op, health+"/readyz", 30*time.Second)
	return stop
}

// startOperatorProcess starts the built operator, without waiting for it,
// and returns it, its health address and how to stop it.
func startOperatorProcess(t *testing.T, kubeconfig, controllerName string) (op *harness.Process, health string, stop func()) {
	t.Helper()
	bin, err := env.Binaries()
	if err != nil {
		t.Fatal(err)
	}
	port := harness.FreePortString(t)
	op, err = harness.StartProcessEnv(env.Dir, []string{"KUBECONFIG=" + kubeconfig}, bin+"/isobar-operator",
		"--controller-name="+controllerName, "--health-probe-bind-address=127.0.0.1:"+port, "--metrics-bind-address=0", "--log-format=console")
	if err != nil {
		t.Fatal(err)
	}
	stop = func() {
		if code, err := op.Stop(20 * time.Second); err != nil || code != 0 {
			t.Errorf("isobar-operator stopped with code %d, %v\n%s", code, err, op.Output())
		}
	}
	t.Cleanup(stop)
	t.Cleanup(func() {
		if os.Getenv("DEBUG_OPERATOR") != "" {
			t.Logf("operator output:\n%s", op.Output())
		}
	})
	return op, "http://127.0.0.1:" + port, stop
}

func classCondition(t *testing.T, ctx context.Context, name, typ string, status metav1.ConditionStatus, reason, message string) {
	t.Helper()
	var last *metav1.Condition
	eventually(t, 30*time.Second, "class "+name+" "+typ+" "+string(status)+" "+reason+" "+message, func() bool {
		c := &gatewayv1.GatewayClass{}
		if err := env.Client.Get(ctx, keyOf("", name), c); err != nil {
			t.Fatal(err)
		}
		last = meta.FindStatusCondition(c.Status.Conditions, typ)
		return last != nil && last.Status == status && last.Reason == reason && strings.Contains(last.Message, message)
	})
}

// The operator accepts classes whose parametersRef it can use and refuses
// the others with a message saying why.
func TestOperatorGatewayClasses(t *testing.T) {
	ns := namespace(t)
	ctx, cancel := harness.Context()
	defer cancel()
	controller := "isobar.dev/op-" + ns
	operator(t, controller)
	create(t, ctx,
		&v1alpha1.ContourDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "good"}},
		&v1alpha1.ContourDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "reserved-mount"}, Spec: v1alpha1.ContourDeploymentSpec{Envoy: v1alpha1.EnvoySettings{
			// The API server refuses mounts under /var/run/isobar; a volume
			// named like the fleet's own gets past it, not past the operator.
			ExtraVolumes: []v1alpha1.ExtraVolume{{Name: "certs", EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		}}},
	)
	ref := func(group, kind, namespace, name string) *gatewayv1.ParametersReference {
		r := &gatewayv1.ParametersReference{Group: gatewayv1.Group(group), Kind: gatewayv1.Kind(kind), Name: name}
		if namespace != "" {
			r.Namespace = (*gatewayv1.Namespace)(&namespace)
		}
		return r
	}
	for _, tc := range []struct {
		name    string
		ref     *gatewayv1.ParametersReference
		status  metav1.ConditionStatus
		reason  string
		message string
	}{
		{"no-params", nil, metav1.ConditionTrue, "Accepted", ""},
		{"good", ref("isobar.dev", "ContourDeployment", ns, "good"), metav1.ConditionTrue, "Accepted", ""},
		{"wrong-kind", ref("", "ConfigMap", ns, "good"), metav1.ConditionFalse, "InvalidParameters", "must be a isobar.dev ContourDeployment, not ConfigMap"},
		{"no-namespace", ref("isobar.dev", "ContourDeployment", "", "good"), metav1.ConditionFalse, "InvalidParameters", "needs a namespace"},
		{"missing", ref("isobar.dev", "ContourDeployment", ns, "nope"), metav1.ConditionFalse, "InvalidParameters", "ContourDeployment " + ns + "/nope does not exist"},
		{"unrenderable", ref("isobar.dev", "ContourDeployment", ns, "reserved-mount"), metav1.ConditionFalse, "InvalidParameters", `spec.envoy.extraVolumes[0]: the name "certs" is the fleet's own`},
	} {
		gc := &gatewayv1.GatewayClass{ObjectMeta: metav1.ObjectMeta{Name: tc.name + "-" + ns}, Spec: gatewayv1.GatewayClassSpec{ControllerName: gatewayv1.GatewayController(controller), ParametersRef: tc.ref}}
		create(t, ctx, gc)
		t.Cleanup(func() { _ = env.Client.Delete(context.Background(), gc) })
		classCondition(t, ctx, gc.Name, "Accepted", tc.status, tc.reason, tc.message)
		if tc.status == metav1.ConditionTrue {
			classCondition(t, ctx, gc.Name, "SupportedVersion", metav1.ConditionTrue, "SupportedVersion", "v1.6")
		}
	}
	// HTTPRoute retry is claimed only where the installed CRD has the
	// field: the standard channel's API server prunes it.
	wantRetry := env.Channel == "experimental"
	eventually(t, 30*time.Second, fmt.Sprintf("HTTPRouteRetry claimed: %t on the %s channel", wantRetry, env.Channel), func() bool {
		c := &gatewayv1.GatewayClass{}
		if err := env.Client.Get(ctx, keyOf("", "good-"+ns), c); err != nil {
			t.Fatal(err)
		}
		claimed := slices.ContainsFunc(c.Status.SupportedFeatures, func(f gatewayv1.SupportedFeature) bool { return f.Name == "HTTPRouteRetry" })
		return len(c.Status.SupportedFeatures) > 0 && claimed == wantRetry
	})
	// Profiles say who uses them and whether they can be used.
	eventually(t, 30*time.Second, "the good profile's status", func() bool {
		cd := &v1alpha1.ContourDeployment{}
		if err := env.Client.Get(ctx, keyOf(ns, "good"), cd); err != nil {
			t.Fatal(err)
		}
		// Not the classes that name it with another kind or no namespace.
		return slices.Equal(cd.Status.GatewayClasses, []string{"good-" + ns}) && meta.IsStatusConditionTrue(cd.Status.Conditions, "Accepted")
	})
	eventually(t, 30*time.Second, "the unusable profile's status", func() bool {
		cd := &v1alpha1.ContourDeployment{}
		if err := env.Client.Get(ctx, keyOf(ns, "reserved-mount"), cd); err != nil {
			t.Fatal(err)
		}
		c := meta.FindStatusCondition(cd.Status.Conditions, "Accepted")
		return c != nil && c.Status == metav1.ConditionFalse && c.Reason == "Invalid" && strings.Contains(c.Message, "certs")
	})
	// Creating the missing profile accepts the class that needed it.
	create(t, ctx, &v1alpha1.ContourDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "nope"}})
	classCondition(t, ctx, "missing-"+ns, "Accepted", metav1.ConditionTrue, "Accepted", "")
}

// A Gateway of an accepted class gets its fleet; the fleet is kept as
// rendered, follows profile changes and goes away with the Gateway.
func TestOperatorProvisionsFleet(t *testing.T) {
	ns := namespace(t)
	ctx, cancel := harness.Context()
	defer cancel()
	controller := "isobar.dev/op-" + ns
	operator(t, controller)
	profile := &v1alpha1.ContourDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "profile"}}
	class := &gatewayv1.GatewayClass{ObjectMeta: metav1.ObjectMeta{Name: "fleet-" + ns}, Spec: gatewayv1.GatewayClassSpec{
		ControllerName: gatewayv1.GatewayController(controller),
		ParametersRef:  &gatewayv1.ParametersReference{Group: "isobar.dev", Kind: "ContourDeployment", Namespace: (*gatewayv1.Namespace)(&ns), Name: "profile"},
	}}
	gw := &gatewayv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}, Spec: gatewayv1.GatewaySpec{
		GatewayClassName: gatewayv1.ObjectName(class.Name),
		Listeners: []gatewayv1.Listener{
			{Name: "http", Protocol: gatewayv1.HTTPProtocolType, Port: 80},
			{Name: "https", Protocol: gatewayv1.HTTPSProtocolType, Port: 443, TLS: &gatewayv1.ListenerTLSConfig{CertificateRefs: []gatewayv1.SecretObjectReference{{Name: "cert"}}}},
			{Name: "alt", Protocol: gatewayv1.HTTPProtocolType, Port: 8080},
			{Name: "collides", Protocol: gatewayv1.HTTPProtocolType, Port: 64592},
		},
	}}
	create(t, ctx, profile, class, gw)
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), class) })
	// The names come from the same function the operator uses (GEP-1762,
	// shortened with a hash when too long).
	n := render.NamesOf(gw)
	waitGatewayCondition(t, ctx, ns, "web", "isobar.dev/Provisioned", metav1.ConditionTrue, "Provisioned", n.Envoy)

	// The Envoy Service: 80 and 64592 both map to container port 64592 and
	// are refused; 443 maps to 64955, 8080 to itself.
	svc := &corev1.Service{}
	if err := env.Client.Get(ctx, keyOf(ns, n.Envoy), svc); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range svc.Spec.Ports {
		got = append(got, p.Name+":"+itoa(int(p.Port))+"->"+p.TargetPort.String())
	}
	if want := []string{"tcp-443:443->64955", "tcp-8080:8080->8080"}; !slices.Equal(got, want) {
		t.Errorf("Envoy Service ports %v, want %v", got, want)
	}
	if svc.Spec.Type != corev1.ServiceTypeLoadBalancer || !metav1.IsControlledBy(svc, gatewayOf(t, ctx, ns)) {
		t.Errorf("Envoy Service type %s, owners %v", svc.Spec.Type, svc.OwnerReferences)
	}
	// The fleet's controller (run here as a process, as there is no
	// kubelet) reports the refused ports on the listeners.
	serve(t, ns, "web", nil)
	eventually(t, 30*time.Second, "listeners http and collides PortUnavailable, https and alt accepted", func() bool {
		g := gatewayOf(t, ctx, ns)
		want := map[string]string{"http": "PortUnavailable", "collides": "PortUnavailable", "https": "Accepted", "alt": "Accepted"}
		for _, l := range g.Status.Listeners {
			if c := meta.FindStatusCondition(l.Conditions, "Accepted"); c != nil && c.Reason == want[string(l.Name)] {
				delete(want, string(l.Name))
			}
		}
		return len(want) == 0
	})

	// The certificates chain to the fleet's CA.
	ca, server := &corev1.Secret{}, &corev1.Secret{}
	if err := env.Client.Get(ctx, keyOf(ns, n.CA), ca); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Get(ctx, keyOf(ns, n.ControllerCerts), server); err != nil {
		t.Fatal(err)
	}
	verifyChain(t, server.Data["tls.crt"], ca.Data["ca.crt"], n.ControllerServiceDNS)
	// The controller Deployment makes Pods (kube-controller-manager runs).
	dep := &appsv1.Deployment{}
	if err := env.Client.Get(ctx, keyOf(ns, n.Controller), dep); err != nil {
		t.Fatal(err)
	}
	if args := strings.Join(dep.Spec.Template.Spec.Containers[0].Args, " "); !strings.Contains(args, "--gateway="+ns+"/web") || !strings.Contains(args, "--envoy-service="+ns+"/"+n.Envoy) {
		t.Errorf("controller args %s", args)
	}
	eventually(t, 30*time.Second, "the controller's Pods", func() bool {
		var pods corev1.PodList
		if err := env.Client.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{"app.kubernetes.io/component": "controller"}); err != nil {
			t.Fatal(err)
		}
		return len(pods.Items) == 2
	})

	// A deleted child comes back; an edited one is put back; a foreign
	// annotation stays.
	if err := env.Client.Delete(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: n.Controller}}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "the deleted controller Service to come back", func() bool {
		return env.Client.Get(ctx, keyOf(ns, n.Controller), &corev1.Service{}) == nil
	})
	err := retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		if err := env.Client.Get(ctx, keyOf(ns, n.Envoy), svc); err != nil {
			return err
		}
		svc.Spec.Ports[0].TargetPort = intstr.FromInt32(1234)
		if svc.Annotations == nil {
			svc.Annotations = map[string]string{}
		}
		svc.Annotations["cloud.example.com/lb-id"] = "lb-42"
		return env.Client.Update(ctx, svc)
	})
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "the edited port restored, the foreign annotation kept", func() bool {
		if err := env.Client.Get(ctx, keyOf(ns, n.Envoy), svc); err != nil {
			t.Fatal(err)
		}
		return svc.Spec.Ports[0].TargetPort.IntValue() == 64955 && svc.Annotations["cloud.example.com/lb-id"] == "lb-42"
	})

	// A profile change: the controller's runtime settings change (and its
	// pods roll), Envoy's pod template does not.
	ds := &appsv1.DaemonSet{}
	if err := env.Client.Get(ctx, keyOf(ns, n.Envoy), ds); err != nil {
		t.Fatal(err)
	}
	envoyGeneration, hash := ds.Generation, dep.Spec.Template.Annotations["isobar.dev/runtime-settings-hash"]
	err = retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		if err := env.Client.Get(ctx, keyOf(ns, "profile"), profile); err != nil {
			return err
		}
		profile.Spec.RuntimeSettings.XDS.UpdateDelay = &metav1.Duration{Duration: 250 * time.Millisecond}
		return env.Client.Update(ctx, profile)
	})
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "the new runtime settings in the controller's ConfigMap and pod template", func() bool {
		cm := &corev1.ConfigMap{}
		if err := env.Client.Get(ctx, keyOf(ns, n.ControllerConfig), cm); err != nil {
			t.Fatal(err)
		}
		if err := env.Client.Get(ctx, keyOf(ns, n.Controller), dep); err != nil {
			t.Fatal(err)
		}
		return strings.Contains(cm.Data["runtime-settings.json"], `"updateDelay":"250ms"`) && dep.Spec.Template.Annotations["isobar.dev/runtime-settings-hash"] != hash
	})
	if err := env.Client.Get(ctx, keyOf(ns, n.Envoy), ds); err != nil {
		t.Fatal(err)
	}
	if ds.Generation != envoyGeneration {
		t.Errorf("the Envoy DaemonSet changed (generation %d -> %d) on a runtime settings change", envoyGeneration, ds.Generation)
	}

	// Switching to a Deployment replaces the DaemonSet.
	err = retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		if err := env.Client.Get(ctx, keyOf(ns, "profile"), profile); err != nil {
			return err
		}
		profile.Spec.Envoy.WorkloadType = v1alpha1.WorkloadTypeDeployment
		return env.Client.Update(ctx, profile)
	})
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "an Envoy Deployment instead of the DaemonSet", func() bool {
		dsErr := env.Client.Get(ctx, keyOf(ns, n.Envoy), &appsv1.DaemonSet{})
		return apierrors.IsNotFound(dsErr) && env.Client.Get(ctx, keyOf(ns, n.Envoy), &appsv1.Deployment{}) == nil
	})

	// An autoscaler owns the Envoy Deployment's replicas: the operator
	// leaves what it sets alone.
	hpa := &autoscalingv2.HorizontalPodAutoscaler{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "envoy"}, Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
		ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: n.Envoy},
		MinReplicas:    ptr.To[int32](2), MaxReplicas: 10,
	}}
	create(t, ctx, hpa)
	// The autoscaler's manager scales only after the operator has seen the
	// autoscaler: until then the operator still owns replicas, as it should.
	eventually(t, 30*time.Second, "the operator releasing the Envoy Deployment's replicas", func() bool {
		envoy := &appsv1.Deployment{}
		if err := env.Client.Get(ctx, keyOf(ns, n.Envoy), envoy); err != nil {
			t.Fatal(err)
		}
		return !ownsReplicas(envoy, provision.FieldOwner)
	})
	cs, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "the Envoy Deployment scaled to 5 by the autoscaler's manager, and kept at 5", func() bool {
		scale, err := cs.AppsV1().Deployments(ns).GetScale(ctx, n.Envoy, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if scale.Spec.Replicas != 5 {
			scale.Spec.Replicas = 5
			if _, err := cs.AppsV1().Deployments(ns).UpdateScale(ctx, n.Envoy, scale, metav1.UpdateOptions{FieldManager: "horizontal-pod-autoscaler"}); err != nil && !apierrors.IsConflict(err) {
				t.Fatal(err)
			}
			return false
		}
		// A reconcile after the scale: change the profile.
		err = retry.RetryOnConflict(retry.DefaultBackoff, func() error {
			if err := env.Client.Get(ctx, keyOf(ns, "profile"), profile); err != nil {
				return err
			}
			profile.Spec.Controller.LogLevel = v1alpha1.ControllerLogDebug
			return env.Client.Update(ctx, profile)
		})
		if err != nil {
			t.Fatal(err)
		}
		return true
	})
	eventually(t, 30*time.Second, "the profile change applied with the autoscaler's replicas kept", func() bool {
		if err := env.Client.Get(ctx, keyOf(ns, n.Controller), dep); err != nil {
			t.Fatal(err)
		}
		envoy := &appsv1.Deployment{}
		if err := env.Client.Get(ctx, keyOf(ns, n.Envoy), envoy); err != nil {
			t.Fatal(err)
		}
		applied := strings.Contains(strings.Join(dep.Spec.Template.Spec.Containers[0].Args, " "), "--log-level=debug")
		if applied && ptr.Deref(envoy.Spec.Replicas, 0) != 5 {
			t.Fatalf("the operator reset the autoscaled Envoy Deployment to %d replicas", ptr.Deref(envoy.Spec.Replicas, 0))
		}
		return applied
	})

	// The controller's RBAC: what it needs and nothing more.
	checkControllerRBAC(t, ctx, ns, n.Controller)

	// Deleting the Gateway removes the cluster-scoped objects too.
	clusterRole := n.ClusterRole
	if err := env.Client.Get(ctx, keyOf("", clusterRole), &rbacv1.ClusterRole{}); err != nil {
		t.Fatalf("cluster role: %v", err)
	}
	if err := env.Client.Delete(ctx, gw); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "the Gateway, its ClusterRole and its Deployment gone", func() bool {
		return apierrors.IsNotFound(env.Client.Get(ctx, keyOf(ns, "web"), &gatewayv1.Gateway{})) &&
			apierrors.IsNotFound(env.Client.Get(ctx, keyOf("", clusterRole), &rbacv1.ClusterRole{})) &&
			apierrors.IsNotFound(env.Client.Get(ctx, keyOf("", clusterRole), &rbacv1.ClusterRoleBinding{})) &&
			apierrors.IsNotFound(env.Client.Get(ctx, keyOf(ns, n.Controller), &appsv1.Deployment{}))
	})
}

func gatewayOf(t *testing.T, ctx context.Context, ns string) *gatewayv1.Gateway {
	t.Helper()
	g := &gatewayv1.Gateway{}
	if err := env.Client.Get(ctx, keyOf(ns, "web"), g); err != nil {
		t.Fatal(err)
	}
	return g
}

func verifyChain(t *testing.T, certPEM, caPEM []byte, name string) {
	t.Helper()
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(caPEM) {
		t.Fatal("no CA certificate")
	}
	b, _ := pem.Decode(certPEM)
	if b == nil {
		t.Fatal("no certificate")
	}
	c, err := x509.ParseCertificate(b.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Verify(x509.VerifyOptions{Roots: roots, DNSName: name, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
		t.Errorf("the controller certificate does not verify for %s: %v", name, err)
	}
}

// checkControllerRBAC asks the real API server's authorizer what the
// controller's ServiceAccount may do.
func checkControllerRBAC(t *testing.T, ctx context.Context, ns, account string) {
	t.Helper()
	user := "system:serviceaccount:" + ns + ":" + account
	groups := []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"}
	for _, tc := range []struct {
		verb, group, resource, subresource, namespace string
		allowed                                       bool
	}{
		{"list", "gateway.networking.k8s.io", "httproutes", "", "", true},
		{"watch", "discovery.k8s.io", "endpointslices", "", "", true},
		{"update", "gateway.networking.k8s.io", "httproutes", "status", "other", true},
		{"update", "gateway.networking.k8s.io", "gateways", "status", ns, true},
		{"create", "coordination.k8s.io", "leases", "", ns, true},
		// Secrets and ConfigMaps only by name (TestOperatorCertificateGrants).
		{"get", "", "secrets", "", "other", false},
		{"list", "", "secrets", "", ns, false},
		{"list", "", "configmaps", "", "", false},
		{"update", "gateway.networking.k8s.io", "httproutes", "", "other", false},
		{"update", "gateway.networking.k8s.io", "gateways", "", ns, false},
		{"delete", "", "secrets", "", ns, false},
		{"create", "", "pods", "", ns, false},
		{"create", "coordination.k8s.io", "leases", "", "other", false},
		{"update", "gateway.networking.k8s.io", "gatewayclasses", "status", "", false},
	} {
		ra := authorizationv1.ResourceAttributes{Verb: tc.verb, Group: tc.group, Resource: tc.resource, Subresource: tc.subresource, Namespace: tc.namespace}
		if got := review(t, ctx, user, groups, ra); got != tc.allowed {
			t.Errorf("%s %s %s/%s in %q: allowed %v, want %v", user, tc.verb, tc.resource, tc.subresource, tc.namespace, got, tc.allowed)
		}
	}
}

// allowed asks the API server's authorizer whether user may verb a core
// resource (a named object when name is set).
func allowed(t *testing.T, ctx context.Context, user string, groups []string, verb, resource, ns, name string) bool {
	t.Helper()
	return review(t, ctx, user, groups, authorizationv1.ResourceAttributes{Verb: verb, Resource: resource, Namespace: ns, Name: name})
}

func review(t *testing.T, ctx context.Context, user string, groups []string, ra authorizationv1.ResourceAttributes) bool {
	t.Helper()
	cs, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: user, Groups: groups, ResourceAttributes: &ra}}
	out, err := cs.AuthorizationV1().SubjectAccessReviews().Create(ctx, sar, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return out.Status.Allowed
}

func itoa(n int) string { return strconv.Itoa(n) }

// A Gateway whose own parametersRef cannot be used gets no fleet and says
// why; its certificates are renewed when they expire; deleted while the
// operator is down, it is cleaned up when the operator comes back.
func TestOperatorGatewayLifecycle(t *testing.T) {
	ns := namespace(t)
	ctx, cancel := harness.Context()
	defer cancel()
	controller := "isobar.dev/op-" + ns
	stop := operator(t, controller)
	class := &gatewayv1.GatewayClass{ObjectMeta: metav1.ObjectMeta{Name: "life-" + ns}, Spec: gatewayv1.GatewayClassSpec{ControllerName: gatewayv1.GatewayController(controller)}}
	gateway := func(name string, ref *gatewayv1.LocalParametersReference) *gatewayv1.Gateway {
		g := &gatewayv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: gatewayv1.GatewaySpec{
			GatewayClassName: gatewayv1.ObjectName(class.Name),
			Listeners:        []gatewayv1.Listener{{Name: "http", Protocol: gatewayv1.HTTPProtocolType, Port: 80}},
		}}
		if ref != nil {
			g.Spec.Infrastructure = &gatewayv1.GatewayInfrastructure{ParametersRef: ref}
		}
		return g
	}
	bad := gateway("bad", &gatewayv1.LocalParametersReference{Group: "isobar.dev", Kind: "ContourDeployment", Name: "absent"})
	good := gateway("good", nil)
	named := gateway("named", nil)
	named.Spec.Addresses = []gatewayv1.GatewaySpecAddress{{Type: ptr.To(gatewayv1.HostnameAddressType), Value: "lb.example.com"}}
	create(t, ctx, class, bad, good, named)
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), class) })
	waitGatewayCondition(t, ctx, ns, "bad", "Accepted", metav1.ConditionFalse, "InvalidParameters", "ContourDeployment "+ns+"/absent does not exist")
	waitGatewayCondition(t, ctx, ns, "bad", "isobar.dev/Provisioned", metav1.ConditionFalse, "InvalidParameters", "absent")
	waitGatewayCondition(t, ctx, ns, "good", "isobar.dev/Provisioned", metav1.ConditionTrue, "Provisioned", "")
	// An address of a type the fleet's Service cannot take.
	waitGatewayCondition(t, ctx, ns, "named", "Accepted", metav1.ConditionFalse, "UnsupportedAddress", "spec.addresses[0]: type Hostname is not supported")
	if !apierrors.IsNotFound(env.Client.Get(ctx, keyOf(ns, render.NamesOf(bad).Controller), &appsv1.Deployment{})) {
		t.Error("the refused Gateway got a controller")
	}
	// The profile it names appears: the Gateway is provisioned, and the
	// profile lists it (its own parametersRef, not its class's, names it).
	if err := createProfile(t, ns, "absent", ""); err != nil {
		t.Fatal(err)
	}
	waitGatewayCondition(t, ctx, ns, "bad", "isobar.dev/Provisioned", metav1.ConditionTrue, "Provisioned", "")
	eventually(t, 30*time.Second, "the profile listing the Gateway that names it", func() bool {
		cd := &v1alpha1.ContourDeployment{}
		if err := env.Client.Get(ctx, keyOf(ns, "absent"), cd); err != nil {
			t.Fatal(err)
		}
		return cd.Status.GatewayCount == 1 && slices.Equal(cd.Status.Gateways, []v1alpha1.GatewayReference{{Namespace: ns, Name: "bad"}})
	})
	// Both Gateways got events.k8s.io Events: the refusal, and the good
	// one's certificates.
	eventually(t, 30*time.Second, "Events for the refusal and the certificates", func() bool {
		var evs eventsv1.EventList
		if err := env.Client.List(ctx, &evs, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		refused, certified := false, false
		for _, e := range evs.Items {
			refused = refused || e.Regarding.Name == "bad" && e.Reason == "InvalidParameters" && e.ReportingController == "isobar-operator"
			certified = certified || e.Regarding.Name == "good" && e.Reason == "CertificatesWritten"
		}
		return refused && certified
	})

	// An expired server certificate is replaced by a valid one.
	n := render.NamesOf(good)
	ca, server := &corev1.Secret{}, &corev1.Secret{}
	if err := env.Client.Get(ctx, keyOf(ns, n.CA), ca); err != nil {
		t.Fatal(err)
	}
	expired, expiredKey, err := certs.Issue(ca.Data["ca.crt"], ca.Data["ca.key"], []string{n.ControllerServiceDNS}, true, time.Now().Add(-200*24*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	err = retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		if err := env.Client.Get(ctx, keyOf(ns, n.ControllerCerts), server); err != nil {
			return err
		}
		server.Data["tls.crt"], server.Data["tls.key"] = expired, expiredKey
		return env.Client.Update(ctx, server)
	})
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "a valid server certificate again", func() bool {
		if err := env.Client.Get(ctx, keyOf(ns, n.ControllerCerts), server); err != nil {
			t.Fatal(err)
		}
		return certs.SignedBy(server.Data["tls.crt"], ca.Data["ca.crt"], []string{n.ControllerServiceDNS}, time.Now())
	})

	// Deleted while the operator is stopped: the finalizer keeps the
	// Gateway until the operator, back, has removed its ClusterRole.
	stop()
	if err := env.Client.Delete(ctx, good); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	if err := env.Client.Get(ctx, keyOf(ns, "good"), &gatewayv1.Gateway{}); err != nil {
		t.Fatalf("the Gateway went away without the operator: %v", err)
	}
	operator(t, controller)
	eventually(t, 30*time.Second, "the Gateway and its ClusterRole gone", func() bool {
		return apierrors.IsNotFound(env.Client.Get(ctx, keyOf(ns, "good"), &gatewayv1.Gateway{})) &&
			apierrors.IsNotFound(env.Client.Get(ctx, keyOf("", n.ClusterRole), &rbacv1.ClusterRole{}))
	})
}

// Static mode (Contour's Gateway API design): a ContourDeployment with spec.gateway gets a
// fleet of its own whose controller runs in controllerName mode, and whose
// Envoy Service publishes the served Gateway's listeners.
func TestOperatorStaticFleet(t *testing.T) {
	ns := namespace(t)
	ctx, cancel := harness.Context()
	defer cancel()
	operator(t, "isobar.dev/op-"+ns)
	static := "example.com/static-" + ns
	class := &gatewayv1.GatewayClass{ObjectMeta: metav1.ObjectMeta{Name: "static-" + ns}, Spec: gatewayv1.GatewayClassSpec{ControllerName: gatewayv1.GatewayController(static)}}
	gw := &gatewayv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "edge"}, Spec: gatewayv1.GatewaySpec{
		GatewayClassName: gatewayv1.ObjectName(class.Name),
		Listeners:        []gatewayv1.Listener{{Name: "http", Protocol: gatewayv1.HTTPProtocolType, Port: 80}},
	}}
	cd := &v1alpha1.ContourDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "edge"},
		Spec: v1alpha1.ContourDeploymentSpec{Gateway: &v1alpha1.StaticGateway{ControllerName: static}}}
	create(t, ctx, class, gw, cd)
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), class) })
	n := render.NamesOf(&gatewayv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "edge"}, Spec: gatewayv1.GatewaySpec{GatewayClassName: "static"}})
	eventually(t, 30*time.Second, "the static fleet provisioned", func() bool {
		if err := env.Client.Get(ctx, keyOf(ns, "edge"), cd); err != nil {
			t.Fatal(err)
		}
		return meta.IsStatusConditionTrue(cd.Status.Conditions, "Provisioned")
	})
	dep := &appsv1.Deployment{}
	if err := env.Client.Get(ctx, keyOf(ns, n.Controller), dep); err != nil {
		t.Fatal(err)
	}
	args := strings.Join(dep.Spec.Template.Spec.Containers[0].Args, " ")
	if !strings.Contains(args, "--controller-name="+static) || strings.Contains(args, "--gateway=") {
		t.Errorf("static controller args %s: want controllerName mode", args)
	}
	svc := &corev1.Service{}
	if err := env.Client.Get(ctx, keyOf(ns, n.Envoy), svc); err != nil {
		t.Fatal(err)
	}
	if len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Port != 80 || svc.Spec.Ports[0].TargetPort.IntValue() != 64592 {
		t.Errorf("static Envoy Service ports %v, want 80 -> 64592", svc.Spec.Ports)
	}
	role := &rbacv1.ClusterRole{}
	if err := env.Client.Get(ctx, keyOf("", n.ClusterRole), role); err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(role.Rules, func(r rbacv1.PolicyRule) bool { return slices.Contains(r.Resources, "gatewayclasses/status") }) {
		t.Error("the static controller may not write GatewayClass status")
	}
	if err := env.Client.Delete(ctx, cd); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "the static fleet released", func() bool {
		return apierrors.IsNotFound(env.Client.Get(ctx, keyOf(ns, "edge"), &v1alpha1.ContourDeployment{})) &&
			apierrors.IsNotFound(env.Client.Get(ctx, keyOf("", n.ClusterRole), &rbacv1.ClusterRole{}))
	})
}

// ownsReplicas reports whether manager applied the Deployment's
// spec.replicas.
func ownsReplicas(d *appsv1.Deployment, manager string) bool {
	for _, m := range d.ManagedFields {
		if m.Manager == manager && m.Operation == metav1.ManagedFieldsOperationApply && m.FieldsV1 != nil &&
			strings.Contains(m.FieldsV1.GetRawString(), `"f:replicas"`) {
			return true
		}
	}
	return false
}
