package render

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	"sigs.k8s.io/yaml"

	"isobar.dev/api/certrefs"
	"isobar.dev/api/v1alpha1"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// TestGolden renders every testdata/*.in.yaml (a Gateway, then a
// ContourDeployment) and compares the fleet with testdata/*.out.yaml.
func TestGolden(t *testing.T) {
	inputs, err := filepath.Glob("testdata/*.in.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range inputs {
		name := strings.TrimSuffix(filepath.Base(in), ".in.yaml")
		t.Run(name, func(t *testing.T) {
			gw, cd := readInput(t, in)
			in := Input{Gateway: gw, ControllerName: "isobar.dev/gateway-controller", Spec: cd.Spec, CertificateRefs: certrefs.Of(certrefs.Input{Gateway: gw})}
			if g := cd.Spec.Gateway; g != nil {
				in.Static, in.ControllerName = true, g.ControllerName
			}
			f, err := Render(in)
			var out bytes.Buffer
			if err != nil {
				out.WriteString("# error\n" + err.Error() + "\n")
			} else {
				write(t, &out, "namespaced", f.Namespaced)
				write(t, &out, "cluster-scoped", f.ClusterScoped)
				write(t, &out, "certificate grants", f.Grants)
			}
			golden := "testdata/" + name + ".out.yaml"
			if *update {
				if err := os.WriteFile(golden, out.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if !bytes.Equal(want, out.Bytes()) {
				t.Errorf("%s differs from the rendering; run go test ./pkg/render -update and review the diff", golden)
			}
		})
	}
}

func readInput(t *testing.T, path string) (*gatewayv1.Gateway, *v1alpha1.ContourDeployment) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	docs := strings.Split(string(data), "\n---\n")
	if len(docs) != 2 {
		t.Fatalf("%s: want a Gateway and a ContourDeployment", path)
	}
	gw, cd := &gatewayv1.Gateway{}, &v1alpha1.ContourDeployment{}
	if err := yaml.UnmarshalStrict([]byte(docs[0]), gw); err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict([]byte(docs[1]), cd); err != nil {
		t.Fatal(err)
	}
	return gw, cd
}

func write(t *testing.T, out *bytes.Buffer, title string, objs []client.Object) {
	t.Helper()
	out.WriteString("# " + title + "\n")
	for _, o := range objs {
		y, err := yaml.Marshal(o)
		if err != nil {
			t.Fatal(err)
		}
		out.WriteString("---\n")
		out.Write(y)
	}
}

// TestInfrastructureMetadata: the Gateway's spec.infrastructure labels and
// annotations are on every object of the fleet, the Pods its workloads
// make and the certificate Secrets (GatewayInfrastructure).
func TestInfrastructureMetadata(t *testing.T) {
	gw, cd := readInput(t, "testdata/deployment.in.yaml")
	cd.Spec.Envoy.PodDisruptionBudget = &v1alpha1.PodDisruptionBudgetSettings{MinAvailable: ptr(intstr.FromInt32(1))}
	f, err := Render(Input{Gateway: gw, ControllerName: "isobar.dev/gateway-controller", Spec: cd.Spec})
	if err != nil {
		t.Fatal(err)
	}
	check := func(what string, labels, annotations map[string]string) {
		t.Helper()
		for k, v := range gw.Spec.Infrastructure.Labels {
			if labels[string(k)] != string(v) {
				t.Errorf("%s: label %s=%q, want %q", what, k, labels[string(k)], v)
			}
		}
		for k, v := range gw.Spec.Infrastructure.Annotations {
			if annotations[string(k)] != string(v) {
				t.Errorf("%s: annotation %s=%q, want %q", what, k, annotations[string(k)], v)
			}
		}
	}
	for _, o := range append(f.Namespaced, f.ClusterScoped...) {
		what := fmt.Sprintf("%T %s", o, o.GetName())
		check(what, o.GetLabels(), o.GetAnnotations())
		switch w := o.(type) {
		case *appsv1.Deployment:
			check(what+" pods", w.Spec.Template.Labels, w.Spec.Template.Annotations)
		case *appsv1.DaemonSet:
			check(what+" pods", w.Spec.Template.Labels, w.Spec.Template.Annotations)
		}
	}
	check("certificate Secrets", f.SecretLabels, f.SecretAnnotations)
}

// TestEmptyAddress: an IPAddress without a value asks for any address
// (GatewayAddressEmpty): the Service is left to get one as it does.
func TestEmptyAddress(t *testing.T) {
	ip := gatewayv1.IPAddressType
	for _, tc := range []struct {
		addrs []gatewayv1.GatewaySpecAddress
		lbIP  string
		ext   []string
	}{
		{[]gatewayv1.GatewaySpecAddress{{Type: &ip}}, "", nil},
		{[]gatewayv1.GatewaySpecAddress{{Type: &ip}, {Type: &ip, Value: "192.0.2.1"}}, "192.0.2.1", nil},
		{[]gatewayv1.GatewaySpecAddress{{Type: &ip, Value: "192.0.2.1"}, {Type: &ip, Value: "192.0.2.2"}}, "", []string{"192.0.2.1", "192.0.2.2"}},
		// An address the API server would refuse is left out; the
		// controller reports it (AddressNotUsable).
		{[]gatewayv1.GatewaySpecAddress{{Type: &ip, Value: "169.254.1.1"}, {Type: &ip, Value: "192.0.2.1"}}, "192.0.2.1", nil},
	} {
		gw := &gatewayv1.Gateway{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"}, Spec: gatewayv1.GatewaySpec{
			GatewayClassName: "isobar", Addresses: tc.addrs,
			Listeners: []gatewayv1.Listener{{Name: "http", Protocol: gatewayv1.HTTPProtocolType, Port: 80}},
		}}
		f, err := Render(Input{Gateway: gw, ControllerName: "isobar.dev/gateway-controller"})
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range f.Namespaced {
			if svc, ok := o.(*corev1.Service); ok && svc.Name == f.Names.Envoy {
				if svc.Spec.LoadBalancerIP != tc.lbIP || !slices.Equal(svc.Spec.ExternalIPs, tc.ext) {
					t.Errorf("%v: loadBalancerIP %q, externalIPs %v; want %q, %v", tc.addrs, svc.Spec.LoadBalancerIP, svc.Spec.ExternalIPs, tc.lbIP, tc.ext)
				}
			}
		}
	}
}

// TestListenerSetPorts: the Service publishes the ports of the listeners
// it is given (the Gateway's and its ListenerSets'), privileged ones mapped.
func TestListenerSetPorts(t *testing.T) {
	gw := &gatewayv1.Gateway{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"}, Spec: gatewayv1.GatewaySpec{
		GatewayClassName: "isobar",
		Listeners:        []gatewayv1.Listener{{Name: "http", Protocol: gatewayv1.HTTPProtocolType, Port: 80}},
	}}
	listeners := append(slices.Clone(gw.Spec.Listeners),
		gatewayv1.Listener{Name: "https", Protocol: gatewayv1.HTTPSProtocolType, Port: 443},
		gatewayv1.Listener{Name: "dns", Protocol: gatewayv1.UDPProtocolType, Port: 5353})
	for _, tc := range []struct {
		listeners []gatewayv1.Listener
		want      []string
	}{
		{nil, []string{"TCP 80->64592"}},
		{listeners, []string{"TCP 80->64592", "TCP 443->64955", "UDP 5353->5353"}},
	} {
		f, err := Render(Input{Gateway: gw, Listeners: tc.listeners, ControllerName: "isobar.dev/gateway-controller"})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, o := range f.Namespaced {
			if svc, ok := o.(*corev1.Service); ok && svc.Name == f.Names.Envoy {
				for _, p := range svc.Spec.Ports {
					got = append(got, fmt.Sprintf("%s %d->%s", p.Protocol, p.Port, p.TargetPort.String()))
				}
			}
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("listeners %d: Service ports %v, want %v", len(tc.listeners), got, tc.want)
		}
	}
}

// The certificate grants name each referenced object, one Role per
// namespace, and never a rule without names (which would grant every
// object of its kind).
func TestCertificateGrants(t *testing.T) {
	gw := &gatewayv1.Gateway{ObjectMeta: metav1.ObjectMeta{Name: "edge", Namespace: "gw"}, Spec: gatewayv1.GatewaySpec{GatewayClassName: "isobar"}}
	in := Input{Gateway: gw, CertificateRefs: []certrefs.Ref{
		{Kind: certrefs.ConfigMap, Namespace: "apps", Name: "ca"},
		{Kind: certrefs.Secret, Namespace: "apps", Name: "b"},
		{Kind: certrefs.Secret, Namespace: "apps", Name: "a"},
		{Kind: certrefs.Secret, Namespace: "gw", Name: "own"},
	}}
	f, err := Render(in)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, o := range f.Grants {
		switch o := o.(type) {
		case *rbacv1.Role:
			for _, r := range o.Rules {
				got = append(got, fmt.Sprintf("%s: %s %v %v", o.Namespace, r.Resources, r.ResourceNames, r.Verbs))
			}
		case *rbacv1.RoleBinding:
			got = append(got, fmt.Sprintf("%s: binds %s to %s/%s", o.Namespace, o.RoleRef.Name, o.Subjects[0].Namespace, o.Subjects[0].Name))
		}
		if o.GetName() != f.Names.ClusterRole || o.GetLabels()[LabelCertificateGrant] != f.Names.ClusterRole {
			t.Errorf("%T %s/%s: want name and %s label %s", o, o.GetNamespace(), o.GetName(), LabelCertificateGrant, f.Names.ClusterRole)
		}
	}
	want := []string{
		"apps: [configmaps] [ca] [get list watch]",
		"apps: [secrets] [a b] [get list watch]",
		"apps: binds " + f.Names.ClusterRole + " to gw/" + f.Names.ControllerAccount,
		"gw: [secrets] [own] [get list watch]",
		"gw: binds " + f.Names.ClusterRole + " to gw/" + f.Names.ControllerAccount,
	}
	if !slices.Equal(got, want) {
		t.Errorf("grants:\n got %q\nwant %q", got, want)
	}
	in.CertificateRefs = nil
	if f, err = Render(in); err != nil || len(f.Grants) != 0 {
		t.Errorf("no references: grants %v, err %v; want none", f.Grants, err)
	}
}
