package offline

import (
	"bytes"
	"encoding/json"
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"isobar.dev/controller/pkg/programmed"
	"isobar.dev/controller/pkg/resources"
	"isobar.dev/controller/pkg/translate"
	"isobar.dev/controller/pkg/xds"
)

// A Translator that has seen earlier snapshots must produce exactly what a
// fresh translation of the new snapshot produces, whatever changed between
// them.
func TestIncrementalMatchesFresh(t *testing.T) {
	base, _, err := LoadFiles([]string{"testdata/backends.in.yaml", "testdata/filters.in.yaml", "testdata/backend-tls.in.yaml", "testdata/attachment.in.yaml", "testdata/https-certificates.in.yaml"}, "")
	if err != nil {
		t.Fatal(err)
	}

	steps := []snapshotStep{
		{"first", func(*resources.Resources) {}},
		{"unchanged", func(*resources.Resources) {}},
		{"route edited", func(r *resources.Resources) {
			c := r.HTTPRoutes[0].DeepCopy()
			c.Generation++
			c.Spec.Rules = c.Spec.Rules[1:]
			r.HTTPRoutes[0] = c
		}},
		{"service port renamed", func(r *resources.Resources) {
			for i, s := range r.Services {
				if s.Name == "svc" {
					c := s.DeepCopy()
					c.Spec.Ports[0].AppProtocol = ptr("kubernetes.io/h2c")
					r.Services[i] = c
				}
			}
		}},
		{"missing service appears", func(r *resources.Resources) {
			r.Services = append(r.Services, &corev1.Service{
				ObjectMeta: metaOf("default", "missing"),
				Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 80}}},
			})
		}},
		{"route deleted", func(r *resources.Resources) { r.HTTPRoutes = r.HTTPRoutes[1:] }},
		{"grant deleted", func(r *resources.Resources) { r.ReferenceGrants = nil }},
		{"namespace labels changed", func(r *resources.Resources) {
			for i, n := range r.Namespaces {
				c := n.DeepCopy()
				c.Labels = map[string]string{"shared-gateway-access": "true"}
				r.Namespaces[i] = c
			}
		}},
		{"listener added", func(r *resources.Resources) {
			c := r.Gateways[0].DeepCopy()
			c.Spec.Listeners = append(c.Spec.Listeners, gatewayv1.Listener{Name: "extra", Protocol: gatewayv1.HTTPProtocolType, Port: 8081})
			r.Gateways[0] = c
		}},
		{"certificate removed", func(r *resources.Resources) { r.Secrets = nil }},
		{"TLS policy CA missing", func(r *resources.Resources) { r.ConfigMaps = nil }},
		{"TLS policy deleted", func(r *resources.Resources) { r.BackendTLSPolicies = r.BackendTLSPolicies[1:] }},
	}
	runSteps(t, base, steps)
}

// incremental is the controller's pair of translators, kept across
// snapshots.
type incremental struct {
	stage1 *translate.Translator
	stage2 map[string]*xds.Translator
	// prev is the last step's result and what it rendered to when it was
	// returned, to check that later steps leave it as it was.
	prev         *Result
	prevRendered map[string][]byte
	// res is the snapshot being translated, whose profiles hold the
	// HTTPProxy settings, as a fresh translation reads them.
	res *resources.Resources
}

func newIncremental() *incremental {
	inc := &incremental{stage2: map[string]*xds.Translator{}}
	o := profileOptions(func() *resources.Resources { return inc.res })
	o.ControllerName = DefaultControllerName
	inc.stage1 = translate.NewTranslator(o)
	return inc
}

// check translates res incrementally and fails the test where the result
// differs from a fresh translation's, or where translating wrote its input
// or what the previous step returned (the immutability rule of package ir).
func (inc *incremental) check(t *testing.T, step string, res *resources.Resources) {
	t.Helper()
	input, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	inc.res = res
	incremental := &Result{Input: res, Gateways: inc.stage1.Translate(res)}
	programmed.Status(incremental.Gateways.Status.Status, programmed.Acknowledged)
	for _, g := range incremental.Gateways.Gateways {
		x, ok := inc.stage2[g.Name]
		if !ok {
			s, _ := settings(res, g.Name)
			x = xds.NewTranslator(s)
			inc.stage2[g.Name] = x
		}
		out, err := x.Translate(g)
		if err == nil {
			out, err = xds.Decoded(out)
		}
		if err != nil {
			t.Fatal(err)
		}
		incremental.XDS = append(incremental.XDS, out)
	}
	if after, _ := json.Marshal(res); !bytes.Equal(input, after) {
		t.Errorf("%s: translating changed the input:\n%s", step, firstDifference(input, after))
	}
	if inc.prev != nil {
		for typ, was := range inc.prevRendered {
			if now, _ := Render(inc.prev, typ, "yaml"); !bytes.Equal(was, now) {
				t.Errorf("%s: translating changed the previous step's %s:\n%s", step, typ, firstDifference(was, now))
			}
		}
	}
	fresh, err := Translate(res, Options{})
	if err != nil {
		t.Fatal(err)
	}
	rendered := map[string][]byte{}
	for _, typ := range []string{"status", "ir", "listeners", "routes", "clusters", "endpoints"} {
		a, err := Render(incremental, typ, "yaml")
		if err != nil {
			t.Fatal(err)
		}
		rendered[typ] = a
		b, _ := Render(fresh, typ, "yaml")
		if !bytes.Equal(a, b) {
			t.Errorf("%s: incremental %s differs from a fresh translation:\n%s", step, typ, firstDifference(b, a))
		}
	}
	inc.prev, inc.prevRendered = incremental, rendered
}

func ptr[T any](v T) *T { return &v }

func metaOf(ns, name string) metav1.ObjectMeta { return metav1.ObjectMeta{Namespace: ns, Name: name} }

// The HTTPRoute/GRPCRoute hostname rule depends on other routes: when the
// older HTTPRoute goes, the GRPCRoute it beat is accepted, also by a
// translator that replays earlier outcomes.
func TestIncrementalKindConflicts(t *testing.T) {
	res, _, err := LoadFiles([]string{"testdata/kind-conflicts.in.yaml"}, "")
	if err != nil {
		t.Fatal(err)
	}
	tr := translate.NewTranslator(translate.Options{ControllerName: DefaultControllerName})
	accepted := func(r *translate.Result, kind, name string) bool {
		ps := r.Status.Routes[translate.RouteKey{Kind: kind, Namespace: "default", Name: name}]
		return len(ps) == 1 && meta.IsStatusConditionTrue(ps[0].Conditions, "Accepted")
	}
	if r := tr.Translate(res); accepted(r, "GRPCRoute", "new-grpc") || !accepted(r, "HTTPRoute", "old-http") {
		t.Fatal("new-grpc should lose a.example.com to the older old-http")
	}
	res.HTTPRoutes = slices.DeleteFunc(res.HTTPRoutes, func(h *gatewayv1.HTTPRoute) bool { return h.Name == "old-http" })
	incremental := tr.Translate(res)
	fresh := translate.NewTranslator(translate.Options{ControllerName: DefaultControllerName}).Translate(res)
	for _, r := range []*translate.Result{incremental, fresh} {
		if !accepted(r, "GRPCRoute", "new-grpc") || accepted(r, "HTTPRoute", "same-kind") {
			t.Error("with old-http gone, new-grpc (older than same-kind) should be accepted and same-kind lose to it")
		}
	}
}

// A root HTTPProxy's TLS virtual host is a filter chain of its own, which
// the second stage keeps while the changes do not name it: when what the
// root read changes (its client CA goes, or comes back), the chains of
// the port are built again, within the same state.
func TestIncrementalProxyChains(t *testing.T) {
	base, _, err := LoadFiles([]string{"testdata/httpproxy-tls.in.yaml"}, "")
	if err != nil {
		t.Fatal(err)
	}
	var ca *corev1.Secret
	for _, s := range base.Secrets {
		if s.Name == "clients-ca" {
			ca = s
		}
	}
	if ca == nil {
		t.Fatal("the input has no Secret clients-ca")
	}
	withoutCA := func(r *resources.Resources) {
		r.Secrets = slices.DeleteFunc(slices.Clone(r.Secrets), func(s *corev1.Secret) bool { return s == ca })
	}
	steps := []snapshotStep{
		{"first", func(*resources.Resources) {}},
		{"unchanged", func(*resources.Resources) {}},
		{"client CA deleted", withoutCA},
		{"client CA back", func(r *resources.Resources) { r.Secrets = append(slices.Clone(r.Secrets), ca) }},
		{"client CA rotated", func(r *resources.Resources) {
			withoutCA(r)
			c := ca.DeepCopy()
			c.Data = map[string][]byte{"ca.crt": []byte("not a certificate")}
			r.Secrets = append(r.Secrets, c)
		}},
	}
	runSteps(t, base, steps)
}

// What an HTTPProxy reads of a Service beyond its ports, its Contour
// annotations and its external name, changes the proxy's clusters when
// it changes.
func TestIncrementalServiceAnnotations(t *testing.T) {
	base, _, err := LoadFiles([]string{"testdata/httpproxy-upstreams.in.yaml"}, "")
	if err != nil {
		t.Fatal(err)
	}
	edit := func(name string, change func(*corev1.Service)) func(*resources.Resources) {
		return func(r *resources.Resources) {
			r.Services = slices.Clone(r.Services)
			for i, s := range r.Services {
				if s.Name == name {
					c := s.DeepCopy()
					change(c)
					r.Services[i] = c
					return
				}
			}
			t.Fatalf("no Service %s", name)
		}
	}
	steps := []snapshotStep{
		{"first", func(*resources.Resources) {}},
		{"upstream protocol annotation removed", edit("annotated", func(s *corev1.Service) { s.Annotations = nil })},
		{"upstream protocol annotation back, as tls", edit("annotated", func(s *corev1.Service) {
			s.Annotations = map[string]string{"projectcontour.io/upstream-protocol.tls": "http"}
		})},
		{"external name changed", func(r *resources.Resources) {
			for _, s := range r.Services {
				if s.Spec.Type == corev1.ServiceTypeExternalName {
					edit(s.Name, func(s *corev1.Service) { s.Spec.ExternalName = "other.example.net" })(r)
					return
				}
			}
			t.Fatal("no ExternalName Service")
		}},
	}
	runSteps(t, base, steps)
}

// snapshotStep is a change to a snapshot, named for messages.
type snapshotStep struct {
	name   string
	change func(r *resources.Resources)
}

// runSteps applies each step to a copy of base in turn and checks that
// a translator that has seen every step translates it as a fresh one.
func runSteps(t *testing.T, base *resources.Resources, steps []snapshotStep) {
	t.Helper()
	snapshot := *base
	inc := newIncremental()
	for _, st := range steps {
		st.change(&snapshot)
		res := snapshot
		inc.check(t, st.name, &res)
	}
}

// A Gateway that stops being a default Gateway lets go of the defaulted
// routes, and takes them back when it is one again; a route that stops
// asking for the default Gateways leaves them.
func TestIncrementalDefaultGateways(t *testing.T) {
	base, _, err := LoadFiles([]string{"testdata/default-gateways.in.yaml"}, "")
	if err != nil {
		t.Fatal(err)
	}
	scope := func(name string, s gatewayv1.GatewayDefaultScope) func(*resources.Resources) {
		return func(r *resources.Resources) {
			r.Gateways = slices.Clone(r.Gateways)
			for i, g := range r.Gateways {
				if g.Name == name {
					c := g.DeepCopy()
					c.Spec.DefaultScope = s
					c.Generation++
					r.Gateways[i] = c
					return
				}
			}
			t.Fatalf("no Gateway %s", name)
		}
	}
	use := func(name string, s gatewayv1.GatewayDefaultScope) func(*resources.Resources) {
		return func(r *resources.Resources) {
			r.HTTPRoutes = slices.Clone(r.HTTPRoutes)
			for i, h := range r.HTTPRoutes {
				if h.Name == name {
					c := h.DeepCopy()
					c.Spec.UseDefaultGateways = s
					c.Generation++
					r.HTTPRoutes[i] = c
					return
				}
			}
			t.Fatalf("no HTTPRoute %s", name)
		}
	}
	runSteps(t, base, []snapshotStep{
		{"first", func(*resources.Resources) {}},
		{"edge is no default", scope("edge", "")},
		{"edge is a default again", scope("edge", gatewayv1.GatewayDefaultScopeAll)},
		{"web becomes a default", scope("web", gatewayv1.GatewayDefaultScopeAll)},
		{"defaulted asks for none", use("defaulted", gatewayv1.GatewayDefaultScopeNone)},
		{"no-default asks for all", use("no-default", gatewayv1.GatewayDefaultScopeAll)},
	})
}
