package main

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"isobar.dev/e2e/harness"
	"isobar.dev/operator/pkg/certs"
	"isobar.dev/operator/pkg/render"
)

// simulatedLoadBalancerIP is what the demo writes into the Envoy Service's
// status, standing in for a cloud load balancer (TEST-NET-1).
const simulatedLoadBalancerIP = "192.0.2.10"

var sampleGateway = types.NamespacedName{Namespace: "default", Name: "web"}

type demo struct {
	out        io.Writer
	env        *harness.Env
	kubeconfig string
	operator   *harness.Process
	controller *harness.Process
	envoy      *simulatedEnvoy
	names      render.Names
	xdsAddress string
}

func (d *demo) startCluster(context.Context) error {
	env, err := harness.Start(harness.Options{ControllerManager: true})
	if err != nil {
		return err
	}
	d.env = env
	d.kubeconfig, err = env.Kubeconfig("demo-admin")
	return err
}

func (d *demo) startOperator(ctx context.Context) error {
	bin, err := d.env.Binaries()
	if err != nil {
		return err
	}
	d.operator, err = harness.StartProcessEnv(d.env.Dir, []string{"KUBECONFIG=" + d.kubeconfig}, bin+"/isobar-operator",
		"--metrics-bind-address=0", "--health-probe-bind-address=127.0.0.1:0", "--log-format=console")
	if err != nil {
		return err
	}
	fmt.Fprintf(d.out, "    isobar-operator logs: %s\n", d.operator.Log)
	return nil
}

func (d *demo) applySamples(ctx context.Context) error {
	root, err := harness.RepoRoot()
	if err != nil {
		return err
	}
	c := d.env.Client
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "isobar-system"}}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	objs, err := harness.KustomizeObjects(filepath.Join(root, "config", "samples"))
	if err != nil {
		return err
	}
	for _, o := range objs {
		if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(o), client.FieldOwner("demo"), client.ForceOwnership); err != nil {
			return fmt.Errorf("applying %s %s: %w", o.GetKind(), o.GetName(), err)
		}
		fmt.Fprintf(d.out, "    %s %s\n", o.GetKind(), strings.TrimPrefix(client.ObjectKeyFromObject(o).String(), "/"))
	}
	// What the samples refer to: backends with endpoints, and the
	// certificate of the HTTPS listener.
	for i, b := range []struct {
		name string
		port int32
	}{{"api", 8080}, {"api-canary", 8080}, {"frontend", 80}, {"postgres", 5432}} {
		svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: b.name},
			Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "main", Port: b.port}}}}
		slice := &discoveryv1.EndpointSlice{
			ObjectMeta:  metav1.ObjectMeta{Namespace: "default", Name: b.name + "-demo", Labels: map[string]string{discoveryv1.LabelServiceName: b.name}},
			AddressType: discoveryv1.AddressTypeIPv4,
			Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("main"), Port: ptr.To(b.port)}},
			Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{fmt.Sprintf("10.0.%d.1", i), fmt.Sprintf("10.0.%d.2", i)}}},
		}
		for _, o := range []client.Object{svc, slice} {
			if err := c.Create(ctx, o); err != nil && !apierrors.IsAlreadyExists(err) {
				return err
			}
		}
	}
	caCert, caKey, err := certs.NewCA("demo CA", time.Now())
	if err != nil {
		return err
	}
	crt, key, err := certs.Issue(caCert, caKey, []string{"*.example.com"}, true, time.Now())
	if err != nil {
		return err
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "example-com-tls"}, Type: corev1.SecretTypeTLS,
		Data: map[string][]byte{"tls.crt": crt, "tls.key": key}}
	if err := c.Create(ctx, secret); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	fmt.Fprintln(d.out, "    Services api, api-canary, frontend, postgres with EndpointSlices; Secret default/example-com-tls (self-signed)")
	return nil
}

func (d *demo) waitForFleet(ctx context.Context) error {
	gw := &gatewayv1.Gateway{}
	return poll(ctx, func() (bool, error) {
		if err := d.env.Client.Get(ctx, sampleGateway, gw); err != nil {
			return false, err
		}
		c := meta.FindStatusCondition(gw.Status.Conditions, "isobar.dev/Provisioned")
		if c == nil {
			return false, nil
		}
		if c.Status != metav1.ConditionTrue {
			return false, fmt.Errorf("the operator did not provision the fleet: %s", c.Message)
		}
		d.names = render.NamesOf(gw)
		// No cloud here: the demo plays the load balancer.
		svc := &corev1.Service{}
		if err := d.env.Client.Get(ctx, types.NamespacedName{Namespace: gw.Namespace, Name: d.names.Envoy}, svc); err != nil {
			return false, err
		}
		svc.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: simulatedLoadBalancerIP}}
		if err := d.env.Client.Status().Update(ctx, svc); err != nil {
			return false, err
		}
		fmt.Fprintf(d.out, "    SIMULATED load balancer: Service %s gets %s\n", d.names.Envoy, simulatedLoadBalancerIP)
		return true, nil
	})
}

func (d *demo) waitProgrammed(ctx context.Context) error {
	gw := &gatewayv1.Gateway{}
	return poll(ctx, func() (bool, error) {
		if err := d.env.Client.Get(ctx, sampleGateway, gw); err != nil {
			return false, err
		}
		return meta.IsStatusConditionTrue(gw.Status.Conditions, "Programmed"), nil
	})
}

// poll calls cond every 100ms until it holds, fails, or ctx ends.
func poll(ctx context.Context, cond func() (bool, error)) error {
	for {
		ok, err := cond()
		if err != nil && !apierrors.IsNotFound(err) {
			return err
		}
		if ok {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (d *demo) close() error {
	if d.envoy != nil {
		d.envoy.close()
	}
	for _, p := range []*harness.Process{d.controller, d.operator} {
		if p != nil {
			_, _ = p.Stop(20 * time.Second)
		}
	}
	if d.env != nil {
		return d.env.Stop()
	}
	return nil
}
