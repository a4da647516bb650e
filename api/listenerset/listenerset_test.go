package listenerset

import (
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

func TestOf(t *testing.T) {
	from := func(f gatewayv1.FromNamespaces, sel map[string]string) *gatewayv1.AllowedListeners {
		a := &gatewayv1.AllowedListeners{Namespaces: &gatewayv1.ListenerNamespaces{From: &f}}
		if sel != nil {
			a.Namespaces.Selector = &metav1.LabelSelector{MatchLabels: sel}
		}
		return a
	}
	t0 := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	t1 := metav1.NewTime(t0.Add(time.Second))
	set := func(ns, name string, created metav1.Time, parentNS *string, port gatewayv1.PortNumber) *gatewayv1.ListenerSet {
		s := &gatewayv1.ListenerSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, CreationTimestamp: created}}
		s.Spec.ParentRef.Name = "gw"
		if parentNS != nil {
			ns := gatewayv1.Namespace(*parentNS)
			s.Spec.ParentRef.Namespace = &ns
		}
		s.Spec.Listeners = []gatewayv1.ListenerEntry{{Name: "l", Port: port, Protocol: gatewayv1.HTTPProtocolType}}
		return s
	}
	infra := "infra"
	sets := []*gatewayv1.ListenerSet{
		set("team", "young", t1, &infra, 81),
		set("team", "old", t0, &infra, 82),
		set("infra", "b", t0, nil, 83),
		set("infra", "a", t0, nil, 84),
		set("other", "elsewhere", t0, nil, 85), // parent other/gw
	}
	labels := func(ns string) (map[string]string, bool) {
		return map[string]string{"team": map[string]string{"team": "yes"}[ns]}, ns != "missing"
	}
	for _, tc := range []struct {
		name    string
		allowed *gatewayv1.AllowedListeners
		want    []string // namespace/name, with "!" when not allowed
		ports   []gatewayv1.PortNumber
	}{
		{"default allows none", nil, []string{"infra/a!", "infra/b!", "team/old!", "team/young!"}, []gatewayv1.PortNumber{80}},
		{"same", from(gatewayv1.NamespacesFromSame, nil), []string{"infra/a", "infra/b", "team/old!", "team/young!"}, []gatewayv1.PortNumber{80, 84, 83}},
		{"all", from(gatewayv1.NamespacesFromAll, nil), []string{"infra/a", "infra/b", "team/old", "team/young"}, []gatewayv1.PortNumber{80, 84, 83, 82, 81}},
		{"selector", from(gatewayv1.NamespacesFromSelector, map[string]string{"team": "yes"}), []string{"infra/a!", "infra/b!", "team/old", "team/young"}, []gatewayv1.PortNumber{80, 82, 81}},
		{"none", from(gatewayv1.NamespacesFromNone, nil), []string{"infra/a!", "infra/b!", "team/old!", "team/young!"}, []gatewayv1.PortNumber{80}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gw := &gatewayv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: "infra", Name: "gw"}}
			gw.Spec.AllowedListeners = tc.allowed
			gw.Spec.Listeners = []gatewayv1.Listener{{Name: "own", Port: 80, Protocol: gatewayv1.HTTPProtocolType}}
			cs := Of(gw, sets, labels)
			var got []string
			for _, c := range cs {
				s := c.Set.Namespace + "/" + c.Set.Name
				if c.NotAllowed != "" {
					s += "!"
					if !strings.Contains(c.NotAllowed, "infra/gw") {
						t.Errorf("%s: reason %q does not name the Gateway", s, c.NotAllowed)
					}
				}
				got = append(got, s)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("Of = %v, want %v", got, tc.want)
			}
			var ports []gatewayv1.PortNumber
			for _, l := range Listeners(gw, cs) {
				ports = append(ports, l.Port)
			}
			if !slices.Equal(ports, tc.ports) {
				t.Errorf("Listeners ports = %v, want %v", ports, tc.ports)
			}
		})
	}
}
