package serve

import (
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"isobar.dev/controller/pkg/gatewayapi"
)

func TestMergeEntries(t *testing.T) {
	then, now := metav1.Unix(1000, 0), metav1.Unix(2000, 0)
	entry := func(controller, gateway string, status metav1.ConditionStatus, at metav1.Time) gatewayv1.RouteParentStatus {
		return gatewayv1.RouteParentStatus{
			ParentRef:      gatewayv1.ParentReference{Name: gatewayv1.ObjectName(gateway)},
			ControllerName: gatewayv1.GatewayController(controller),
			Conditions:     []metav1.Condition{{Type: "Accepted", Status: status, Reason: "R", LastTransitionTime: at}},
		}
	}
	ours := func(p gatewayv1.RouteParentStatus) bool { return p.ControllerName == "us" }
	for _, tc := range []struct {
		name             string
		current, desired []gatewayv1.RouteParentStatus
		want             []gatewayv1.RouteParentStatus
	}{
		{
			name:    "added after the others",
			current: []gatewayv1.RouteParentStatus{entry("them", "x", "True", then)},
			desired: []gatewayv1.RouteParentStatus{entry("us", "web", "True", now)},
			want:    []gatewayv1.RouteParentStatus{entry("them", "x", "True", then), entry("us", "web", "True", now)},
		},
		{
			// Another controller appended after ours: the order stays, or
			// the two would reorder the list after each other forever.
			name:    "kept in place",
			current: []gatewayv1.RouteParentStatus{entry("us", "web", "True", then), entry("them", "x", "True", then)},
			desired: []gatewayv1.RouteParentStatus{entry("us", "web", "True", now)},
			want:    []gatewayv1.RouteParentStatus{entry("us", "web", "True", then), entry("them", "x", "True", then)},
		},
		{
			name:    "status change moves the transition time",
			current: []gatewayv1.RouteParentStatus{entry("us", "web", "True", then)},
			desired: []gatewayv1.RouteParentStatus{entry("us", "web", "False", now)},
			want:    []gatewayv1.RouteParentStatus{entry("us", "web", "False", now)},
		},
		{
			name:    "ours removed, theirs kept",
			current: []gatewayv1.RouteParentStatus{entry("us", "web", "True", then), entry("them", "web", "True", then)},
			want:    []gatewayv1.RouteParentStatus{entry("them", "web", "True", then)},
		},
		{
			name:    "duplicate entries of ours collapse",
			current: []gatewayv1.RouteParentStatus{entry("us", "web", "True", then), entry("us", "web", "True", then)},
			desired: []gatewayv1.RouteParentStatus{entry("us", "web", "True", now)},
			want:    []gatewayv1.RouteParentStatus{entry("us", "web", "True", then)},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, mergeEntries(tc.current, tc.desired, parentEntry, ours)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// A pass reads and writes an object only when its entries are a new slice,
// someone touched it, or it lost its entries.
func TestWriteEachSkipsWhatItWrote(t *testing.T) {
	a, b := []string{"a"}, []string{"b"}
	var mu sync.Mutex
	var wrote []string
	write := func(k string, v []string) error {
		mu.Lock()
		defer mu.Unlock()
		wrote = append(wrote, fmt.Sprintf("%s=%v", k, v))
		return nil
	}
	none := func(string) bool { return false }
	before, _ := writeEach(map[string][]string{"r1": a, "r2": b}, nil, none, write)
	for _, tc := range []struct {
		name    string
		desired map[string][]string
		recheck func(string) bool
		want    []string
	}{
		{"the same slices", map[string][]string{"r1": a, "r2": b}, none, nil},
		{"an equal but new slice", map[string][]string{"r1": {"a"}, "r2": b}, none, nil},
		{"a changed slice", map[string][]string{"r1": {"a", "c"}, "r2": b}, none, []string{"r1=[a c]"}},
		{"touched", map[string][]string{"r1": a, "r2": b}, func(k string) bool { return k == "r2" }, []string{"r2=[b]"}},
		{"gone", map[string][]string{"r1": a}, none, []string{"r2=[]"}},
	} {
		wrote = nil
		if _, err := writeEach(tc.desired, before, tc.recheck, write); err != nil {
			t.Fatal(err)
		}
		slices.Sort(wrote)
		if !slices.Equal(wrote, tc.want) {
			t.Errorf("%s: wrote %v, want %v", tc.name, wrote, tc.want)
		}
	}
}

// An object a watch event brings is known by the key each kind's pass
// looks its objects up by: otherwise a status someone else changed would
// never be checked again.
func TestKeyOfMatchesPassKeys(t *testing.T) {
	s, err := scheme()
	if err != nil {
		t.Fatal(err)
	}
	at := metav1.ObjectMeta{Namespace: "ns", Name: "x"}
	name := types.NamespacedName{Namespace: "ns", Name: "x"}
	for _, tc := range []struct {
		obj  client.Object
		want objectKey
	}{
		{&gatewayv1.HTTPRoute{ObjectMeta: at}, routeKey(gatewayapi.RouteKey{Kind: "HTTPRoute", Namespace: "ns", Name: "x"})},
		{&gatewayv1.GRPCRoute{ObjectMeta: at}, routeKey(gatewayapi.RouteKey{Kind: "GRPCRoute", Namespace: "ns", Name: "x"})},
		{&gatewayv1.TLSRoute{ObjectMeta: at}, routeKey(gatewayapi.RouteKey{Kind: "TLSRoute", Namespace: "ns", Name: "x"})},
		{&gatewayv1.TCPRoute{ObjectMeta: at}, routeKey(gatewayapi.RouteKey{Kind: "TCPRoute", Namespace: "ns", Name: "x"})},
		{&gatewayv1.UDPRoute{ObjectMeta: at}, routeKey(gatewayapi.RouteKey{Kind: "UDPRoute", Namespace: "ns", Name: "x"})},
		{&gatewayv1.BackendTLSPolicy{ObjectMeta: at}, policyKey(name)},
	} {
		if got := keyOf(tc.obj, s); got != tc.want {
			t.Errorf("%T: key %s %v, want %s %v", tc.obj, got.kind, got.NamespacedName, tc.want.kind, tc.want.NamespacedName)
		}
	}
}

// The writer's passes: a new translation checks what it changed, a pass
// after one that wrote everything writes the Gateway alone, an object
// someone else changed (not our own write coming back) is checked again,
// and a failed pass has everything checked again.
func TestWriterPasses(t *testing.T) {
	s, err := scheme()
	if err != nil {
		t.Fatal(err)
	}
	w := &statusWriter{scheme: s, kick: make(chan struct{}, 1)}
	if _, ok := w.next(); ok {
		t.Fatal("a pass before any translation")
	}
	route := &gatewayv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "r", ResourceVersion: "5"}}
	touchedKey := routeKey(gatewayapi.RouteKey{Kind: "HTTPRoute", Namespace: "ns", Name: "r"})
	otherKey := routeKey(gatewayapi.RouteKey{Kind: "HTTPRoute", Namespace: "ns", Name: "other"})
	for _, tc := range []struct {
		what           string
		event          func()
		gatewayOnly    bool
		touched, other bool // rechecked
		passFails      bool
	}{
		{"a translation", func() { w.set(&statusWork{}) }, false, false, false, false},
		{"the fleet acknowledged", w.pokeGateway, true, false, false, false},
		{"our own write coming back", func() { w.wrote(route); w.touched(route) }, true, false, false, false},
		{"someone else's write", func() {
			c := route.DeepCopy()
			c.ResourceVersion = "6"
			w.touched(c)
		}, false, true, false, true},
		{"after a failed pass", w.poke, false, true, true, false},
		{"the Gateway touched", func() { w.touched(&gatewayv1.Gateway{}) }, true, false, false, false},
	} {
		tc.event()
		p, ok := w.next()
		if !ok {
			t.Fatalf("%s: no pass", tc.what)
		}
		if p.gatewayOnly != tc.gatewayOnly || p.recheck(touchedKey) != tc.touched || p.recheck(otherKey) != tc.other {
			t.Errorf("%s: gateway only %v, rechecks the touched route %v and another %v; want %v, %v, %v",
				tc.what, p.gatewayOnly, p.recheck(touchedKey), p.recheck(otherKey), tc.gatewayOnly, tc.touched, tc.other)
		}
		if tc.passFails {
			w.poke()
			continue
		}
		w.passed(p)
	}
}
