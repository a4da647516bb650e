package offline

import (
	"slices"
	"testing"

	contourv1alpha1 "github.com/projectcontour/contour/apis/projectcontour/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	gatewayxv1alpha1 "sigs.k8s.io/gateway-api/apisx/v1alpha1"

	"isobar.dev/controller/pkg/resources"
)

// What a root HTTPProxy reads of the ExtensionServices it authorizes
// with, and the Gateway of the rate limit service its profile names,
// changes the translation when it changes: an ExtensionService deleted
// and back, its spec edited, its Service's ports changed, and a missing
// Service created; each step is compared with a fresh translation.
func TestIncrementalExtensionServices(t *testing.T) {
	for _, input := range []string{"testdata/httpproxy-authorization.in.yaml", "testdata/httpproxy-global-ratelimits.in.yaml"} {
		t.Run(input, func(t *testing.T) {
			base, _, err := LoadFiles([]string{input}, "")
			if err != nil {
				t.Fatal(err)
			}
			if len(base.ExtensionServices) == 0 {
				t.Fatal("the input has no ExtensionService")
			}
			first := base.ExtensionServices[0]
			without := func(r *resources.Resources) {
				r.ExtensionServices = slices.DeleteFunc(slices.Clone(r.ExtensionServices), func(x *contourv1alpha1.ExtensionService) bool { return x == first })
			}
			edited := func(r *resources.Resources) {
				without(r)
				x := first.DeepCopy()
				x.Generation++
				x.Spec.TimeoutPolicy = nil
				x.Spec.Protocol = nil // h2: TLS to the server
				r.ExtensionServices = append(r.ExtensionServices, x)
			}
			service := func(name string) *corev1.Service {
				for _, s := range base.Services {
					if s.Namespace == first.Namespace && s.Name == name {
						return s
					}
				}
				return nil
			}
			target := service(first.Spec.Services[0].Name)
			if target == nil {
				t.Fatalf("no Service %s/%s", first.Namespace, first.Spec.Services[0].Name)
			}
			steps := []snapshotStep{
				{"first", func(*resources.Resources) {}},
				{"unchanged", func(*resources.Resources) {}},
				{"ExtensionService deleted", without},
				{"ExtensionService back", func(r *resources.Resources) { r.ExtensionServices = append(slices.Clone(r.ExtensionServices), first) }},
				{"ExtensionService edited", edited},
				{"its Service's port renumbered", func(r *resources.Resources) {
					r.Services = slices.DeleteFunc(slices.Clone(r.Services), func(s *corev1.Service) bool { return s == target })
					s := target.DeepCopy()
					for i := range s.Spec.Ports {
						s.Spec.Ports[i].Port += 1000
					}
					r.Services = append(r.Services, s)
				}},
				{"a missing Service created", func(r *resources.Resources) {
					r.Services = append(slices.Clone(r.Services), &corev1.Service{ObjectMeta: metaOf(first.Namespace, "gone"),
						Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "grpc", Port: 9000}}}})
				}},
			}
			runSteps(t, base, steps)
		})
	}
}

// An XBackendTrafficPolicy deleted lets the newer one it beat apply; back,
// it applies again; edited, its budget follows: each step as a fresh
// translation has it.
func TestIncrementalBackendTrafficPolicies(t *testing.T) {
	base, _, err := LoadFiles([]string{"testdata/backend-traffic.in.yaml"}, "")
	if err != nil {
		t.Fatal(err)
	}
	var budget *gatewayxv1alpha1.XBackendTrafficPolicy
	for _, p := range base.BackendTrafficPolicies {
		if p.Name == "budget" {
			budget = p
		}
	}
	if budget == nil {
		t.Fatal("the input has no XBackendTrafficPolicy budget")
	}
	without := func(r *resources.Resources) {
		r.BackendTrafficPolicies = slices.DeleteFunc(slices.Clone(r.BackendTrafficPolicies), func(p *gatewayxv1alpha1.XBackendTrafficPolicy) bool { return p == budget })
	}
	runSteps(t, base, []snapshotStep{
		{"first", func(*resources.Resources) {}},
		{"the older policy deleted", without},
		{"back", func(r *resources.Resources) {
			r.BackendTrafficPolicies = append(slices.Clone(r.BackendTrafficPolicies), budget)
		}},
		{"edited", func(r *resources.Resources) {
			without(r)
			p := budget.DeepCopy()
			p.Generation++
			p.Spec.RetryConstraint.Budget.Percent = ptr(75)
			r.BackendTrafficPolicies = append(r.BackendTrafficPolicies, p)
		}},
	})
}
