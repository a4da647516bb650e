package offline

import (
	"slices"
	"testing"

	contourv1alpha1 "github.com/projectcontour/contour/apis/projectcontour/v1alpha1"
	corev1 "k8s.io/api/core/v1"

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
