package engine

import (
	"testing"

	"k8s.io/apimachinery/pkg/types"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"isobar.dev/controller/pkg/ir"
)

var http80 = Listener{Key: TableKey{Port: 80}, Family: FamilyHTTP, ContainerPort: 8080}

func meta(name string, created int64) *metav1.ObjectMeta {
	return &metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + name), Generation: 1, CreationTimestamp: metav1.Unix(created, 0)}
}

func prefix(name, path string) *ir.Route {
	return &ir.Route{Name: name, Match: ir.Match{PathType: ir.PathPrefix, Path: path}}
}

// apply records and applies an outcome adding routes to host h of the
// state's only listener.
func apply(s *State[struct{}], kind string, src Source, m *metav1.ObjectMeta, rank int32, h string, routes ...*ir.Route) *Outcome[struct{}] {
	o := s.Record(kind, src, false, m, rank)
	o.Added = []Addition{{Listener: 0, Hosts: []string{h}, Routes: [][]*ir.Route{routes}}}
	s.Apply(o)
	return o
}

func build(s *State[struct{}]) *ir.Gateway {
	g := &ir.Gateway{}
	s.Build(g)
	return g
}

func routeNames(l *ir.Listener) []string {
	var out []string
	for _, vh := range l.HTTP.VirtualHosts {
		for _, r := range vh.Routes {
			out = append(out, vh.Name+" "+r.Name)
		}
	}
	return out
}

func sameNames(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// On one host, routes of one match are ordered by source before age: a
// newer HTTPRoute takes an older Ingress's path, which is told it is
// shadowed; more specific matches come first whatever their source. The
// Ingress comes in a later translation, so that its entries are merged
// into the host's rather than sorted with the others.
func TestPrecedenceAcrossSources(t *testing.T) {
	s := NewState[struct{}](1, 4)
	s.Begin([]Listener{http80})
	route := apply(s, "HTTPRoute", FromGatewayAPI, meta("new-route", 2), 0, "h", prefix("route-cart", "/cart"))
	proxy := apply(s, "HTTPProxy", FromHTTPProxy, meta("proxy", 1), 1, "h", prefix("proxy-cart", "/cart"))
	s.Prepare()
	build(s)
	s.Begin([]Listener{http80})
	ing := apply(s, "Ingress", FromIngress, meta("old-ingress", 0), 0, "h", prefix("ingress-cart", "/cart"), prefix("ingress-cart-long", "/cart/items"))
	s.Prepare()
	ls := build(s).Listeners
	if len(ls) != 1 {
		t.Fatalf("built %d listeners, want 1", len(ls))
	}
	want := []string{"h ingress-cart-long", "h route-cart", "h proxy-cart", "h ingress-cart"}
	if got := routeNames(ls[0]); !sameNames(got, want) {
		t.Errorf("routes %v, want %v", got, want)
	}
	for _, tc := range []struct {
		o    *Outcome[struct{}]
		want string
	}{{ing, "new-route"}, {proxy, "new-route"}, {route, ""}} {
		var by []string
		s.Shadowed(tc.o, func(_ string, _ *ir.Route, m *metav1.ObjectMeta) { by = append(by, m.Name) })
		switch {
		case tc.want == "" && len(by) > 0:
			t.Errorf("%s shadowed by %v, want by none", tc.o.Meta.Name, by)
		case tc.want != "" && (len(by) != 1 || by[0] != tc.want):
			t.Errorf("%s shadowed by %v, want by %s", tc.o.Meta.Name, by, tc.want)
		}
	}
}

// A route object no longer in the snapshot is taken back, a new object of
// a route at the same generation keeps its outcome, an unchanged listener
// is the same IR object, and a host without routes goes.
func TestSweepRekeyAndTakeBack(t *testing.T) {
	s := NewState[struct{}](1, 2)
	s.Begin([]Listener{http80})
	a, b := meta("a", 1), meta("b", 2)
	oa := apply(s, "HTTPRoute", FromGatewayAPI, a, 0, "a.example", prefix("a", "/"))
	apply(s, "HTTPRoute", FromGatewayAPI, b, 1, "b.example", prefix("b", "/"))
	s.Prepare()
	first := build(s).Listeners[0]

	// Nothing changed: the same listener.
	s.Begin([]Listener{http80})
	all := []*metav1.ObjectMeta{a, b}
	id := func(m *metav1.ObjectMeta) *metav1.ObjectMeta { return m }
	if fresh, seen := Unseen(s, nil, all, id); len(fresh) != 0 || seen != 2 {
		t.Fatalf("Unseen = %d new, %d seen; want 0, 2", len(fresh), seen)
	}
	s.Prepare()
	if again := build(s).Listeners[0]; again != first {
		t.Error("an unchanged table built a new listener")
	}

	// a's status is written (a new object, same generation) and b goes.
	a2 := a.DeepCopy()
	a2.ResourceVersion = "2"
	s.Begin([]Listener{http80})
	fresh, _ := Unseen(s, nil, []*metav1.ObjectMeta{a2}, id)
	s.Sweep(nil, map[RouteKey]*metav1.ObjectMeta{KeyOf("HTTPRoute", a2): a2})
	if got := s.Applied(a2); got != oa {
		t.Errorf("the new object of a has outcome %v, want its old one", got)
	}
	if s.Applied(a) != nil || s.Applied(b) != nil || s.Len() != 1 {
		t.Errorf("the state holds %d outcomes, the old object of a or b among them", s.Len())
	}
	if fresh = NotApplied(s, fresh, id); len(fresh) != 0 {
		t.Errorf("%d routes left to attach after the rekey, want 0", len(fresh))
	}
	s.Prepare()
	l := build(s).Listeners[0]
	if l == first {
		t.Error("the listener is the same object after a host went")
	}
	if got, want := routeNames(l), []string{"a.example a"}; !sameNames(got, want) {
		t.Errorf("routes %v, want %v", got, want)
	}
	var shadowedBy []string
	s.Shadowed(oa, func(_ string, _ *ir.Route, m *metav1.ObjectMeta) { shadowedBy = append(shadowedBy, m.Name) })
	if len(shadowedBy) > 0 {
		t.Errorf("a is shadowed by %v after its rekey: an entry kept the old object", shadowedBy)
	}

	// a goes too: no listener is left.
	s.Begin([]Listener{http80})
	s.Sweep(nil, nil)
	s.Prepare()
	if ls := build(s).Listeners; len(ls) != 0 {
		t.Errorf("built %d listeners without routes, want 0", len(ls))
	}
}

// The oldest claim of a server name keeps it.
func TestClaimStream(t *testing.T) {
	s := NewState[struct{}](1, 2)
	tls := Listener{Key: TableKey{Port: 443}, Family: FamilyTLS}
	tb := s.Table(tls)
	dest := &ir.Destination{}
	if !tb.ClaimStream("db.example", "ns/old", nil, dest) {
		t.Fatal("the first claim was refused")
	}
	if !tb.ClaimStream("db.example", "ns/old", nil, dest) {
		t.Error("a route's claim of its own name again was refused")
	}
	if tb.ClaimStream("db.example", "ns/new", nil, dest) {
		t.Error("a second route took a claimed server name")
	}
	if s.Prepare(); len(build(s).Listeners) != 1 {
		t.Error("a table with a stream built no listener")
	}
}

// Each build says what it built again since the previous one: the
// listeners, their route tables and, in those, the virtual hosts.
func TestChanges(t *testing.T) {
	s := NewState[struct{}](1, 3)
	s.Begin([]Listener{http80})
	apply(s, "HTTPRoute", FromGatewayAPI, meta("a", 1), 0, "a.example", prefix("a", "/"))
	apply(s, "HTTPRoute", FromGatewayAPI, meta("b", 2), 1, "b.example", prefix("b", "/"))
	s.Prepare()
	first := build(s)
	if first.Changes != nil || first.Serial == 0 {
		t.Fatalf("the first build has serial %d and changes %v, want a serial and no changes", first.Serial, first.Changes)
	}
	for _, step := range []struct {
		name   string
		change func()
		// listeners built again, and the virtual hosts built again of
		// http_80 (nil when the table is not built again).
		listeners []string
		vhosts    []string
	}{
		{"nothing", func() {}, nil, nil},
		{"a route on a new host", func() {
			apply(s, "HTTPRoute", FromGatewayAPI, meta("c", 3), 0, "c.example", prefix("c", "/"))
		}, []string{"http_80"}, []string{"c.example"}},
		{"a route on a host of another", func() {
			apply(s, "HTTPRoute", FromGatewayAPI, meta("d", 4), 0, "b.example", prefix("d", "/d"))
		}, []string{"http_80"}, []string{"b.example"}},
	} {
		before := first.Serial
		s.Begin([]Listener{http80})
		step.change()
		s.Prepare()
		g := build(s)
		first = g
		if g.Changes == nil || g.Changes.Base != before {
			t.Fatalf("%s: changes %v, want changes to serial %d", step.name, g.Changes, before)
		}
		if got := sortedKeys(g.Changes.Listeners); !sameNames(got, step.listeners) {
			t.Errorf("%s: listeners built again %v, want %v", step.name, got, step.listeners)
		}
		vhosts, ok := g.Changes.RouteTables["http_80"]
		if ok != (step.vhosts != nil) {
			t.Errorf("%s: route table http_80 built again: %t, want %t", step.name, ok, step.vhosts != nil)
		}
		if got := sortedKeys(vhosts); !sameNames(got, step.vhosts) {
			t.Errorf("%s: virtual hosts built again %v, want %v", step.name, got, step.vhosts)
		}
	}
}

// A host's policy is its owner's: it stays while another object's routes
// on the host come and go, follows its owner to a new object of it, and
// goes with its owner.
func TestHostPolicy(t *testing.T) {
	s := NewState[struct{}](1, 2)
	policy := &ir.VirtualHostPolicy{LocalRateLimit: &ir.LocalRateLimit{Max: 1, PerFill: 1}}
	root, route := meta("root", 1), meta("route", 2)
	hostPolicy := func() *ir.VirtualHostPolicy {
		s.Prepare()
		for _, vh := range build(s).Listeners[0].HTTP.VirtualHosts {
			if vh.Name == "shop.example" {
				return vh.Policy
			}
		}
		return nil
	}
	s.Begin([]Listener{http80})
	o := s.Record("HTTPProxy", FromHTTPProxy, false, root, 0)
	o.Added = []Addition{{Listener: 0, Hosts: []string{"shop.example"}, Routes: [][]*ir.Route{{prefix("proxy", "/")}}, Policy: policy}}
	s.Apply(o)
	apply(s, "HTTPRoute", FromGatewayAPI, route, 1, "shop.example", prefix("route", "/api"))
	if got := hostPolicy(); got != policy {
		t.Fatalf("host policy %v, want the root's", got)
	}
	id := func(m *metav1.ObjectMeta) *metav1.ObjectMeta { return m }

	// The HTTPRoute goes; the root's status is written.
	root2 := root.DeepCopy()
	s.Begin([]Listener{http80})
	Unseen(s, nil, []*metav1.ObjectMeta{root2}, id)
	s.Sweep(nil, map[RouteKey]*metav1.ObjectMeta{KeyOf("HTTPProxy", root2): root2})
	if got := hostPolicy(); got != policy {
		t.Errorf("after the HTTPRoute went and the root's rekey: host policy %v, want the root's", got)
	}

	// Another route comes, and the root goes: the host stays, without
	// the policy.
	s.Begin([]Listener{http80})
	Unseen(s, nil, []*metav1.ObjectMeta{root2}, id)
	apply(s, "HTTPRoute", FromGatewayAPI, meta("other", 3), 0, "shop.example", prefix("other", "/other"))
	s.Begin([]Listener{http80})
	s.Sweep(nil, nil)
	apply(s, "HTTPRoute", FromGatewayAPI, meta("other", 3), 0, "shop.example", prefix("other", "/other"))
	if got := hostPolicy(); got != nil {
		t.Errorf("after the root went: host policy %v, want none", got)
	}
}
