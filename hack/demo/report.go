package main

import (
	"context"
	"fmt"
	"sort"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"isobar.dev/api/fleet"
	"isobar.dev/api/ports"
	"isobar.dev/controller/pkg/envoysim"
)

// report prints what a user wants to see once the Gateway is Programmed.
func (d *demo) report(ctx context.Context) error {
	c, out := d.env.Client, d.out
	class := &gatewayv1.GatewayClass{}
	if err := c.Get(ctx, client.ObjectKey{Name: "isobar"}, class); err != nil {
		return err
	}
	fmt.Fprintf(out, "\nGatewayClass isobar (%s)\n", class.Spec.ControllerName)
	conditions(d, class.Status.Conditions)
	fmt.Fprintf(out, "  supportedFeatures: %d\n", len(class.Status.SupportedFeatures))

	gw := &gatewayv1.Gateway{}
	if err := c.Get(ctx, sampleGateway, gw); err != nil {
		return err
	}
	fmt.Fprintf(out, "\nGateway %s\n", sampleGateway)
	conditions(d, gw.Status.Conditions)
	for _, a := range gw.Status.Addresses {
		fmt.Fprintf(out, "  address %s (from the SIMULATED load balancer)\n", a.Value)
	}
	for _, l := range gw.Status.Listeners {
		var cs []string
		for _, cond := range l.Conditions {
			cs = append(cs, cond.Type+"="+string(cond.Status))
		}
		fmt.Fprintf(out, "  listener %-16s attachedRoutes %d  %s\n", l.Name, l.AttachedRoutes, strings.Join(cs, " "))
	}

	fmt.Fprintf(out, "\nThe fleet (objects labelled %s=%s)\n", fleet.LabelGatewayName, sampleGateway.Name)
	sel := client.MatchingLabels{fleet.LabelGatewayName: sampleGateway.Name, fleet.LabelManagedBy: fleet.ManagedBy}
	lists := []struct {
		kind string
		list client.ObjectList
		ns   bool
	}{
		{"Deployment", &appsv1.DeploymentList{}, true}, {"DaemonSet", &appsv1.DaemonSetList{}, true}, {"Service", &corev1.ServiceList{}, true},
		{"ServiceAccount", &corev1.ServiceAccountList{}, true}, {"ConfigMap", &corev1.ConfigMapList{}, true}, {"Role", &rbacv1.RoleList{}, true},
		{"RoleBinding", &rbacv1.RoleBindingList{}, true}, {"PodDisruptionBudget", &policyv1.PodDisruptionBudgetList{}, true}, {"ClusterRole", &rbacv1.ClusterRoleList{}, false}, {"ClusterRoleBinding", &rbacv1.ClusterRoleBindingList{}, false},
	}
	for _, l := range lists {
		opts := []client.ListOption{sel}
		if l.ns {
			opts = append(opts, client.InNamespace(sampleGateway.Namespace))
		}
		if err := c.List(ctx, l.list, opts...); err != nil {
			return err
		}
		for _, o := range items(l.list) {
			fmt.Fprintf(out, "  %-19s %s%s\n", l.kind, o.GetName(), describe(o))
		}
	}
	var secrets corev1.SecretList
	if err := c.List(ctx, &secrets, client.InNamespace(sampleGateway.Namespace), sel); err != nil {
		return err
	}
	for _, s := range secrets.Items {
		fmt.Fprintf(out, "  %-19s %s (%s)\n", "Secret", s.Name, strings.Join(keys(s.Data), ", "))
	}

	sim, ls, rs, cs, es, err := d.envoy.simulator()
	if err != nil {
		return err
	}
	fmt.Fprintln(out, "\nEnvoy configuration served over xDS (as the SIMULATED Envoy holds it)")
	for _, l := range ls {
		fmt.Fprintf(out, "  listener %-12s port %d, %d filter chain(s)\n", l.Name, l.GetAddress().GetSocketAddress().GetPortValue(), len(l.FilterChains))
	}
	for _, r := range rs {
		for _, vh := range r.VirtualHosts {
			fmt.Fprintf(out, "  routes   %-34s %-18s %d route(s)\n", r.Name, strings.Join(vh.Domains, ","), len(vh.Routes))
		}
	}
	endpoints := map[string]int{}
	for _, e := range es {
		for _, l := range e.Endpoints {
			endpoints[e.ClusterName] += len(l.LbEndpoints)
		}
	}
	for _, cl := range cs {
		fmt.Fprintf(out, "  cluster  %-34s %d endpoint(s)\n", cl.Name, endpoints[cl.Name])
	}

	fmt.Fprintln(out, "\nexplain (envoysim on that configuration)")
	for _, r := range []struct {
		what string
		req  envoysim.Request
	}{
		{"GET http://app.example.com/api/users", envoysim.Request{Port: uint32(ports.ContainerPort(80)), Method: "GET", Authority: "app.example.com", Path: "/api/users"}},
		{"GET http://app.example.com/api/users (another request)", envoysim.Request{Port: uint32(ports.ContainerPort(80)), Method: "GET", Authority: "app.example.com", Path: "/api/users", Seed: 95}},
		{"GET https://app.example.com/", envoysim.Request{Port: uint32(ports.ContainerPort(443)), TLS: true, SNI: "app.example.com", Method: "GET", Authority: "app.example.com", Path: "/"}},
		{"TLS to db.example.com:8443", envoysim.Request{Port: 8443, TLS: true, SNI: "db.example.com"}},
		{"GET http://unknown.example.org/", envoysim.Request{Port: uint32(ports.ContainerPort(80)), Method: "GET", Authority: "unknown.example.org", Path: "/"}},
	} {
		a, err := sim.Simulate(r.req)
		if err != nil {
			fmt.Fprintf(out, "  %-52s -> %v\n", r.what, err)
			continue
		}
		fmt.Fprintf(out, "  %-52s -> %s\n", r.what, answer(a))
	}
	return nil
}

func conditions(d *demo, cs []metav1.Condition) {
	for _, c := range cs {
		fmt.Fprintf(d.out, "  %-24s %-6s %-20s %s\n", c.Type, c.Status, c.Reason, c.Message)
	}
}

func answer(a *envoysim.Answer) string {
	where := a.Listener
	if a.Route != "" {
		where += " / " + a.VirtualHost + " / " + a.Route
	}
	switch {
	case a.Response != nil:
		return fmt.Sprintf("%s: Envoy answers %d", where, a.Response.Status)
	case a.Upstream != nil:
		return fmt.Sprintf("%s: cluster %s (weight %d/%d), endpoints %s", where, a.Upstream.Cluster, a.Upstream.Weight, a.Upstream.TotalWeight, strings.Join(a.Upstream.Endpoints, " "))
	}
	return where
}

func items(l client.ObjectList) []client.Object {
	objs, _ := meta.ExtractList(l)
	out := make([]client.Object, 0, len(objs))
	for _, o := range objs {
		if co, ok := o.(client.Object); ok {
			out = append(out, co)
		}
	}
	return out
}

// describe adds what matters of an object: a Service's ports, a
// workload's replicas.
func describe(o client.Object) string {
	switch o := o.(type) {
	case *corev1.Service:
		var ps []string
		for _, p := range o.Spec.Ports {
			ps = append(ps, fmt.Sprintf("%d->%s/%s", p.Port, p.TargetPort.String(), p.Protocol))
		}
		return fmt.Sprintf(" (%s: %s)", o.Spec.Type, strings.Join(ps, ", "))
	case *appsv1.Deployment:
		return fmt.Sprintf(" (%d/%d pods ready; no kubelet here)", o.Status.ReadyReplicas, deref(o.Spec.Replicas))
	case *appsv1.DaemonSet:
		return " (no nodes here)"
	case *policyv1.PodDisruptionBudget:
		if v := o.Spec.MaxUnavailable; v != nil {
			return " (maxUnavailable " + v.String() + ")"
		}
		if v := o.Spec.MinAvailable; v != nil {
			return " (minAvailable " + v.String() + ")"
		}
	}
	return ""
}

func deref(p *int32) int32 {
	if p == nil {
		return 0
	}
	return *p
}

func keys(m map[string][]byte) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
