package gatewayapi

import (
	"fmt"
	"maps"
	"runtime"
	"slices"
	"strings"
	"testing"
	"weak"

	contourv1 "github.com/projectcontour/contour/apis/projectcontour/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8stypes "k8s.io/apimachinery/pkg/types"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"isobar.dev/controller/pkg/engine"
	"isobar.dev/controller/pkg/ir"
	"isobar.dev/controller/pkg/resources"
)

// depsClass is the class both inputs' Gateway is of.
const depsClass = `
apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: isobar}
spec: {controllerName: isobar.dev/gateway-controller}
`

const depsInput = depsClass + `
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: gw, namespace: infra}
spec:
  gatewayClassName: isobar
  listeners:
  - {name: http, port: 80, protocol: HTTP, allowedRoutes: {namespaces: {from: All}}}
---
apiVersion: v1
kind: Service
metadata: {name: solo, namespace: apps, uid: solo}
spec: {ports: [{name: http, port: 8080}]}
---
apiVersion: v1
kind: Service
metadata: {name: shared, namespace: apps, uid: shared}
spec: {ports: [{name: http, port: 8080}]}
---
apiVersion: v1
kind: Service
metadata: {name: remote, namespace: backends, uid: remote}
spec: {ports: [{name: http, port: 8080}]}
---
apiVersion: v1
kind: Service
metadata: {name: unused, namespace: elsewhere, uid: unused}
spec: {ports: [{name: http, port: 8080}]}
---
apiVersion: gateway.networking.k8s.io/v1beta1
kind: ReferenceGrant
metadata: {name: routes, namespace: backends}
spec:
  from: [{group: gateway.networking.k8s.io, kind: HTTPRoute, namespace: apps}]
  to: [{group: "", kind: Service}]
---
apiVersion: gateway.networking.k8s.io/v1beta1
kind: ReferenceGrant
metadata: {name: other, namespace: elsewhere}
spec:
  from: [{group: gateway.networking.k8s.io, kind: HTTPRoute, namespace: apps}]
  to: [{group: "", kind: Service}]
`

func depsRoute(name, backendNS, backend string) string {
	return fmt.Sprintf(`
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: %s, namespace: apps}
spec:
  parentRefs: [{name: gw, namespace: infra}]
  hostnames: [%s.example.com]
  rules: [{backendRefs: [{name: %s, namespace: %s, port: 8080}]}]
`, name, name, backend, backendNS)
}

// A change to what rules read re-translates the rules of the routes that
// read it and no other: the rest keep their translated rules (the same
// object), whatever else in the cluster changed.
func TestDepsRetranslateOnlyReaders(t *testing.T) {
	in := depsInput + depsRoute("solo", "apps", "solo") + depsRoute("remote", "backends", "remote")
	for i := range 4 {
		in += depsRoute(fmt.Sprint("shared-", i), "apps", "shared")
	}
	res := &resources.Resources{}
	if _, err := res.Load("deps", strings.NewReader(in)); err != nil {
		t.Fatal(err)
	}
	tr := NewTranslator(Options{ControllerName: "isobar.dev/gateway-controller"})
	rules := func() map[string]*engine.Rules {
		tr.Translate(res)
		s := tr.states[k8stypes.NamespacedName{Namespace: "infra", Name: "gw"}]
		out := map[string]*engine.Rules{}
		for _, r := range res.HTTPRoutes {
			o := s.Applied(&r.ObjectMeta)
			if o == nil || o.Rules == nil {
				t.Fatalf("route %s has no translated rules", r.Name)
			}
			out[r.Name] = o.Rules
		}
		return out
	}
	before := rules()
	for _, step := range []struct {
		what   string
		change func()
		want   []string // routes whose rules are translated again
	}{
		{"a Service no route uses gets a port", func() { addPort(res, "elsewhere", "unused") }, nil},
		{"a ReferenceGrant in a namespace no route reads is narrowed", func() { narrowGrant(res, "elsewhere") }, nil},
		{"the Gateway's status is written", func() {
			gw := res.Gateways[0].DeepCopy()
			gw.ResourceVersion += "1"
			res.Gateways = []*gatewayv1.Gateway{gw}
		}, nil},
		{"a Service one route uses gets a port", func() { addPort(res, "apps", "solo") }, []string{"solo"}},
		{"a Service four routes use gets a port", func() { addPort(res, "apps", "shared") }, []string{"shared-0", "shared-1", "shared-2", "shared-3"}},
		{"the ReferenceGrant a route reads is narrowed", func() { narrowGrant(res, "backends") }, []string{"remote"}},
		{"the Service it no longer reaches goes", func() { deleteService(res, "backends", "remote") }, nil},
	} {
		step.change()
		after := rules()
		if got := replaced(before, after); !slices.Equal(got, step.want) {
			t.Errorf("%s: rules translated again for %v, want %v", step.what, got, step.want)
		}
		before = after
	}
}

// replaced names, sorted, the keys whose values after are not the same
// objects as before.
func replaced[V comparable](before, after map[string]V) []string {
	var out []string
	for name, v := range after {
		if v != before[name] {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

func addPort(res *resources.Resources, ns, name string) {
	res.Services = slices.Clone(res.Services)
	for i, s := range res.Services {
		if s.Namespace == ns && s.Name == name {
			c := s.DeepCopy()
			p := c.Spec.Ports[0]
			p.Name, p.Port = "extra", p.Port+1
			c.Spec.Ports = append(c.Spec.Ports, p)
			res.Services[i] = c
		}
	}
}

func deleteService(res *resources.Resources, ns, name string) {
	res.Services = slices.DeleteFunc(slices.Clone(res.Services), func(s *corev1.Service) bool { return s.Namespace == ns && s.Name == name })
}

func narrowGrant(res *resources.Resources, ns string) {
	res.ReferenceGrants = slices.Clone(res.ReferenceGrants)
	for i, g := range res.ReferenceGrants {
		if g.Namespace == ns {
			c := g.DeepCopy()
			name := gatewayv1.ObjectName("narrowed")
			c.Spec.To[0].Name = &name
			res.ReferenceGrants[i] = c
		}
	}
}

const attachDepsInput = depsClass + `
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: gw, namespace: infra}
spec:
  gatewayClassName: isobar
  listeners:
  - {name: all, port: 80, protocol: HTTP, allowedRoutes: {namespaces: {from: All}}}
  - name: selected
    port: 8080
    protocol: HTTP
    allowedRoutes: {namespaces: {from: Selector, selector: {matchLabels: {gateway: allowed}}}}
  - {name: tcp, port: 9000, protocol: TCP, allowedRoutes: {namespaces: {from: All}}}
---
apiVersion: v1
kind: Namespace
metadata: {name: a, labels: {gateway: allowed}}
---
apiVersion: v1
kind: Namespace
metadata: {name: b, labels: {team: b}}
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: selected, namespace: a}
spec:
  parentRefs: [{name: gw, namespace: infra, sectionName: selected}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: everywhere, namespace: b}
spec:
  parentRefs: [{name: gw, namespace: infra, sectionName: all}]
`

// What attaching a route reads is recorded in its outcome too: a
// namespace's labels are read only by the routes a selector looks at, and
// TLS, TCP and UDP routes coming and going attach no HTTPRoute again. An
// outcome that is kept is the same object.
func TestDepsReattachOnlyReaders(t *testing.T) {
	res := &resources.Resources{}
	if _, err := res.Load("attach-deps", strings.NewReader(attachDepsInput)); err != nil {
		t.Fatal(err)
	}
	tr := NewTranslator(Options{ControllerName: "isobar.dev/gateway-controller"})
	outcomes := func() map[string]*outcome {
		tr.Translate(res)
		s := tr.states[k8stypes.NamespacedName{Namespace: "infra", Name: "gw"}]
		out := map[string]*outcome{}
		for _, r := range res.HTTPRoutes {
			if out[r.Name] = s.Applied(&r.ObjectMeta); out[r.Name] == nil {
				t.Fatalf("route %s has no outcome", r.Name)
			}
		}
		return out
	}
	relabel := func(ns string, labels map[string]string) func() {
		return func() {
			res.Namespaces = slices.Clone(res.Namespaces)
			for i, n := range res.Namespaces {
				if n.Name == ns {
					c := n.DeepCopy()
					c.Labels = labels
					res.Namespaces[i] = c
				}
			}
		}
	}
	before := outcomes()
	for _, step := range []struct {
		what   string
		change func()
		want   []string // routes attached again
	}{
		{"a namespace no selector looks at is relabelled", relabel("b", map[string]string{"team": "c"}), nil},
		{"a TCPRoute is created", func() {
			if _, err := res.Load("tcp", strings.NewReader(`
apiVersion: gateway.networking.k8s.io/v1
kind: TCPRoute
metadata: {name: tcp, namespace: b}
spec:
  parentRefs: [{name: gw, namespace: infra, sectionName: tcp}]
  rules: [{backendRefs: [{name: db, port: 5432}]}]
`)); err != nil {
				t.Fatal(err)
			}
		}, nil},
		{"the selected namespace loses its label", relabel("a", nil), []string{"selected"}},
		{"and gets it back", relabel("a", map[string]string{"gateway": "allowed"}), []string{"selected"}},
	} {
		step.change()
		after := outcomes()
		if got := replaced(before, after); !slices.Equal(got, step.want) {
			t.Errorf("%s: routes attached again: %v, want %v", step.what, got, step.want)
		}
		before = after
	}
	st := tr.Translate(res).Status
	if ps := st.Routes[RouteKey{Kind: "TCPRoute", Namespace: "b", Name: "tcp"}]; len(ps) != 1 {
		t.Fatalf("the TCPRoute has %d parent statuses, want 1", len(ps))
	}
}

// A route without parentRefs (what the per-Gateway controller caches of
// other Gateways' routes) attaches nowhere: it holds no outcome in the
// state, and a new object of it attaches nothing again, HTTPRoute or
// stream route.
func TestRoutesWithoutParentsHoldNothing(t *testing.T) {
	res := &resources.Resources{}
	if _, err := res.Load("attach-deps", strings.NewReader(attachDepsInput+`
---
apiVersion: gateway.networking.k8s.io/v1
kind: TCPRoute
metadata: {name: tcp, namespace: b}
spec:
  parentRefs: [{name: gw, namespace: infra, sectionName: tcp}]
  rules: [{backendRefs: [{name: db, port: 5432}]}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: stub, namespace: b}
---
apiVersion: gateway.networking.k8s.io/v1
kind: TCPRoute
metadata: {name: tcp-stub, namespace: b}
`)); err != nil {
		t.Fatal(err)
	}
	tr := NewTranslator(Options{ControllerName: "isobar.dev/gateway-controller"})
	state := func() map[*metav1.ObjectMeta]*outcome {
		tr.Translate(res)
		return maps.Collect(tr.states[k8stypes.NamespacedName{Namespace: "infra", Name: "gw"}].Outcomes())
	}
	before := state()
	if len(before) != 3 {
		t.Fatalf("the state holds %d outcomes, want 3 (two HTTPRoutes and a TCPRoute)", len(before))
	}
	for _, stub := range []*metav1.ObjectMeta{&res.HTTPRoutes[2].ObjectMeta, &res.TCPRoutes[1].ObjectMeta} {
		if stub.Name != "stub" && stub.Name != "tcp-stub" {
			t.Fatalf("route %s is not a stub", stub.Name)
		}
		if before[stub] != nil {
			t.Errorf("route %s without parentRefs holds an outcome", stub.Name)
		}
	}
	// New objects of both stubs, as when another Gateway's routes change.
	res.HTTPRoutes = slices.Clone(res.HTTPRoutes)
	res.HTTPRoutes[2] = res.HTTPRoutes[2].DeepCopy()
	res.TCPRoutes = slices.Clone(res.TCPRoutes)
	res.TCPRoutes[1] = res.TCPRoutes[1].DeepCopy()
	if after := state(); !maps.Equal(before, after) {
		t.Errorf("new objects of routes without parentRefs attached routes again")
	}
}

// sharedHostRoutes are three HTTPRoutes, with UIDs, on one hostname of one
// listener.
var sharedHostRoutes = func() string {
	input := depsClass + `
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: gw, namespace: infra}
spec:
  gatewayClassName: isobar
  listeners: [{name: http, port: 80, protocol: HTTP, allowedRoutes: {namespaces: {from: All}}}]
`
	for i := range 3 {
		input += fmt.Sprintf(`---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: r%d, namespace: a, uid: u%d}
spec:
  parentRefs: [{name: gw, namespace: infra}]
  hostnames: [shared.example.com]
  rules: [{matches: [{path: {value: /r%d}}]}]
`, i, i, i)
	}
	return input
}()

// A new object of a route at the same generation (a status write) keeps
// the route's outcome: it is not attached again. A new generation, or a
// route without a UID to tell it is the same, is.
func TestStatusWriteKeepsOutcome(t *testing.T) {
	res := &resources.Resources{}
	if _, err := res.Load("replaced", strings.NewReader(sharedHostRoutes)); err != nil {
		t.Fatal(err)
	}
	tr := NewTranslator(Options{ControllerName: "isobar.dev/gateway-controller"})
	outcomeOf := func(r *gatewayv1.HTTPRoute) *outcome {
		tr.Translate(res)
		return tr.states[k8stypes.NamespacedName{Namespace: "infra", Name: "gw"}].Applied(&r.ObjectMeta)
	}
	replace := func(edit func(*gatewayv1.HTTPRoute)) *gatewayv1.HTTPRoute {
		res.HTTPRoutes = slices.Clone(res.HTTPRoutes)
		c := res.HTTPRoutes[0].DeepCopy()
		c.ResourceVersion += "1"
		edit(c)
		res.HTTPRoutes[0] = c
		return c
	}
	before := outcomeOf(res.HTTPRoutes[0])
	if before == nil {
		t.Fatal("the route has no outcome")
	}
	if after := outcomeOf(replace(func(r *gatewayv1.HTTPRoute) { r.Status.Parents = nil })); after != before {
		t.Errorf("a status write attached the route again")
	}
	if after := outcomeOf(replace(func(r *gatewayv1.HTTPRoute) { r.Generation++ })); after == before || after == nil {
		t.Errorf("a new generation did not attach the route again")
	}
	before = outcomeOf(res.HTTPRoutes[0])
	if after := outcomeOf(replace(func(r *gatewayv1.HTTPRoute) { r.UID = "" })); after == before || after == nil {
		t.Errorf("a route whose UID changed was not attached again")
	}
}

// The translator keeps no route object the snapshot has replaced: every
// route's object is replaced when its status is written, and lists of
// entries truncated for reuse kept one or two old objects of every route
// alive (twice the informer cache at 10,000 routes).
func TestReplacedRoutesAreNotKept(t *testing.T) {
	input := sharedHostRoutes
	res := &resources.Resources{}
	if _, err := res.Load("replaced", strings.NewReader(input)); err != nil {
		t.Fatal(err)
	}
	tr := NewTranslator(Options{ControllerName: "isobar.dev/gateway-controller"})
	tr.Translate(res)
	var old []weak.Pointer[gatewayv1.HTTPRoute]
	// One route's object at a time, then all of them, as status writes
	// replace them.
	for _, replace := range [][]int{{0}, {1}, {2}, {0, 1, 2}, {1}} {
		routes := slices.Clone(res.HTTPRoutes)
		for _, i := range replace {
			old = append(old, weak.Make(routes[i]))
			routes[i] = routes[i].DeepCopy()
			routes[i].ResourceVersion += "1"
		}
		res.HTTPRoutes = routes
		if g := tr.Translate(res); len(g.Status.Routes) != 3 {
			t.Fatalf("%d routes have status, want 3", len(g.Status.Routes))
		}
	}
	runtime.GC()
	runtime.GC()
	kept := 0
	for _, p := range old {
		if p.Value() != nil {
			kept++
		}
	}
	if kept > 0 {
		t.Errorf("the translator keeps %d of %d replaced route objects", kept, len(old))
	}
	runtime.KeepAlive(tr)
}

// A status write of a TLS, TCP or UDP route keeps every stream route's
// outcome: they are attached again together only when one of them changed
// (which of them holds a listener or server name depends on the others).
func TestStreamStatusWriteKeepsOutcomes(t *testing.T) {
	input := depsClass + `
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: gw, namespace: infra}
spec:
  gatewayClassName: isobar
  listeners:
  - {name: tls, port: 443, protocol: TLS, tls: {mode: Passthrough}, allowedRoutes: {namespaces: {from: All}}}
  - {name: tcp, port: 5432, protocol: TCP, allowedRoutes: {namespaces: {from: All}}}
---
apiVersion: v1
kind: Service
metadata: {name: db, namespace: a}
spec: {ports: [{port: 5432}]}
---
apiVersion: gateway.networking.k8s.io/v1
kind: TLSRoute
metadata: {name: old, namespace: a, uid: u0, creationTimestamp: "2026-01-01T00:00:00Z"}
spec:
  parentRefs: [{name: gw, namespace: infra, sectionName: tls}]
  hostnames: [db.example.com]
  rules: [{backendRefs: [{name: db, port: 5432}]}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: TLSRoute
metadata: {name: new, namespace: a, uid: u1, creationTimestamp: "2026-02-01T00:00:00Z"}
spec:
  parentRefs: [{name: gw, namespace: infra, sectionName: tls}]
  hostnames: [db.example.com]
  rules: [{backendRefs: [{name: db, port: 5432}]}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: TCPRoute
metadata: {name: pg, namespace: a, uid: u2}
spec:
  parentRefs: [{name: gw, namespace: infra, sectionName: tcp}]
  rules: [{backendRefs: [{name: db, port: 5432}]}]
`
	res := &resources.Resources{}
	if _, err := res.Load("streams", strings.NewReader(input)); err != nil {
		t.Fatal(err)
	}
	tr := NewTranslator(Options{ControllerName: "isobar.dev/gateway-controller"})
	outcomes := func() []*outcome {
		g := tr.Translate(res)
		if len(g.Status.Routes) != 3 {
			t.Fatalf("%d routes have status, want 3", len(g.Status.Routes))
		}
		applied := tr.states[k8stypes.NamespacedName{Namespace: "infra", Name: "gw"}].Applied
		return []*outcome{applied(&res.TLSRoutes[0].ObjectMeta), applied(&res.TLSRoutes[1].ObjectMeta), applied(&res.TCPRoutes[0].ObjectMeta)}
	}
	replace := func(i int, edit func(*gatewayv1.TLSRoute)) {
		res.TLSRoutes = slices.Clone(res.TLSRoutes)
		c := res.TLSRoutes[i].DeepCopy()
		c.ResourceVersion += "1"
		edit(c)
		res.TLSRoutes[i] = c
	}
	before := outcomes()
	if slices.Contains(before, nil) {
		t.Fatalf("a route has no outcome: %v", before)
	}
	replace(0, func(r *gatewayv1.TLSRoute) { r.Status.Parents = nil })
	if after := outcomes(); !slices.Equal(after, before) {
		t.Errorf("a TLSRoute's status write attached stream routes again")
	}
	replace(0, func(r *gatewayv1.TLSRoute) { r.Generation++ })
	if after := outcomes(); after[0] == before[0] || after[1] == before[1] {
		t.Errorf("a TLSRoute's new generation did not attach the routes of its server name again")
	}
}

// A processor's route whose selection is Rekeyed keeps its outcome over a
// status write (a new object at the same generation), as an HTTPRoute
// does: our own status writes after every change must not translate every
// HTTPProxy tree again. One that is not Rekeyed (an Ingress, whose routes
// change with its annotations) is attached again.
func TestProcessorStatusWriteKeepsOutcome(t *testing.T) {
	const in = depsClass + `---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: gw, namespace: infra}
spec: {gatewayClassName: isobar, listeners: [{name: ingress-http, protocol: HTTP, port: 80, allowedRoutes: {namespaces: {from: All}}}]}
---
apiVersion: projectcontour.io/v1
kind: HTTPProxy
metadata: {name: root, namespace: app, uid: root-uid, generation: 1}
spec:
  virtualhost: {fqdn: app.example.com}
`
	for _, rekeyed := range []bool{true, false} {
		res := &resources.Resources{}
		if _, err := res.Load("proxy", strings.NewReader(in)); err != nil {
			t.Fatal(err)
		}
		tr := NewTranslator(Options{ControllerName: "isobar.dev/gateway-controller"})
		gw := k8stypes.NamespacedName{Namespace: "infra", Name: "gw"}
		p := &routesProcessor{rekeyed: rekeyed}
		tr.Translate(res, p)
		for _, tc := range []struct {
			what string
			edit func(*contourv1.HTTPProxy)
			kept bool
		}{
			{"a status write", func(p *contourv1.HTTPProxy) { p.Status.CurrentStatus = "valid" }, rekeyed},
			{"a new generation", func(p *contourv1.HTTPProxy) { p.Generation++ }, false},
		} {
			before := tr.states[gw].Applied(&res.HTTPProxies[0].ObjectMeta)
			c := res.HTTPProxies[0].DeepCopy()
			tc.edit(c)
			res.HTTPProxies = []*contourv1.HTTPProxy{c}
			tr.Translate(res, p)
			after := tr.states[gw].Applied(&c.ObjectMeta)
			if before == nil || after == nil || (after == before) != tc.kept {
				t.Errorf("rekeyed %t, %s: the outcome kept: %t (attached: %t, %t), want %t", rekeyed, tc.what, after == before, before != nil, after != nil, tc.kept)
			}
		}
	}
}

// routesProcessor attaches every HTTPProxy of the snapshot as a route
// that adds nothing.
type routesProcessor struct{ rekeyed bool }

func (p *routesProcessor) ForGateway(*Gateway) GatewayProcessor { return p }

func (p *routesProcessor) Select(res *resources.Resources) Selection {
	sel := Selection{Kind: "HTTPProxy", Source: engine.FromHTTPProxy, Rekeyed: p.rekeyed}
	for _, r := range res.HTTPProxies {
		sel.Routes = append(sel.Routes, &r.ObjectMeta)
	}
	return sel
}

func (p *routesProcessor) Attach(*Outcome, *metav1.ObjectMeta) {}
func (p *routesProcessor) Report()                             {}
func (p *routesProcessor) RateLimit() *ir.RateLimitService     { return nil }
