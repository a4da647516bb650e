package main

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
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

	"isobar.dev/api/v1alpha1"
	"isobar.dev/e2e/harness"
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
	// releaseAddress gives the controller Pod's address up.
	releaseAddress func()
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
	// No kubelet runs here, so the sample backends' Pods never become
	// ready: the demo plays the endpoints controller for them.
	for i, name := range []string{"api", "api-canary", "frontend", "db"} {
		svc := &corev1.Service{}
		if err := c.Get(ctx, types.NamespacedName{Namespace: "default", Name: name}, svc); err != nil {
			return fmt.Errorf("the samples' Service %s: %w", name, err)
		}
		p := svc.Spec.Ports[0]
		target := p.TargetPort.IntVal
		if target == 0 {
			target = p.Port
		}
		slice := &discoveryv1.EndpointSlice{
			ObjectMeta:  metav1.ObjectMeta{Namespace: "default", Name: name + "-demo", Labels: map[string]string{discoveryv1.LabelServiceName: name}},
			AddressType: discoveryv1.AddressTypeIPv4,
			Ports:       []discoveryv1.EndpointPort{{Name: ptr.To(p.Name), Port: ptr.To(target)}},
			Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{fmt.Sprintf("10.0.%d.1", i), fmt.Sprintf("10.0.%d.2", i)}}},
		}
		if err := c.Create(ctx, slice); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
	}
	fmt.Fprintln(d.out, "    EndpointSlices for api, api-canary, frontend and db (SIMULATED: no kubelet runs their Pods)")
	return nil
}

func (d *demo) waitForFleet(ctx context.Context) error {
	gw := &gatewayv1.Gateway{}
	last := "no isobar.dev/Provisioned condition yet"
	err := poll(ctx, func() (bool, error) {
		if err := d.env.Client.Get(ctx, sampleGateway, gw); err != nil {
			return false, err
		}
		c := meta.FindStatusCondition(gw.Status.Conditions, v1alpha1.GatewayConditionProvisioned)
		if c == nil {
			return false, nil
		}
		if c.Status != metav1.ConditionTrue {
			// The samples arrive in one apply, in kustomize's order: the
			// class may be seen before its profile. Wait, and say why
			// when it never comes.
			last = c.Message
			return false, nil
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
	if err != nil {
		return fmt.Errorf("the operator did not provision the fleet (%s): %w", last, err)
	}
	return nil
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
	if d.releaseAddress != nil {
		d.releaseAddress()
	}
	if d.env != nil {
		return d.env.Stop()
	}
	return nil
}

// keepLogs copies the processes' logs out of the cluster's scratch
// directory into a directory of their own, and returns it ("" when there
// are none).
func (d *demo) keepLogs() (string, error) {
	if d.env == nil {
		return "", nil
	}
	var logs []string
	err := filepath.WalkDir(d.env.Dir, func(path string, e fs.DirEntry, err error) error {
		if err == nil && !e.IsDir() && strings.HasSuffix(path, ".log") {
			logs = append(logs, path)
		}
		return nil
	})
	if err != nil || len(logs) == 0 {
		return "", err
	}
	dir, err := os.MkdirTemp("", "isobar-demo-logs-")
	if err != nil {
		return "", err
	}
	for _, l := range logs {
		data, err := os.ReadFile(l)
		if err != nil {
			continue
		}
		rel, _ := filepath.Rel(d.env.Dir, l)
		if err := os.WriteFile(filepath.Join(dir, strings.ReplaceAll(rel, string(filepath.Separator), "_")), data, 0o644); err != nil {
			return "", err
		}
	}
	return dir, nil
}
