package serve

import (
	"testing"

	"k8s.io/apimachinery/pkg/types"

	"isobar.dev/controller/pkg/ir"
)

// A cluster with shares is recomputed when any of its Services' slices
// change: the index lists it under each, once.
func TestClustersByService(t *testing.T) {
	src := func(svc string) ir.ClusterSource {
		return ir.ClusterSource{Namespace: "ns", Service: svc, PortName: "dns", Protocol: "UDP"}
	}
	a := &ir.Cluster{Name: "ns/a/53/udp", Source: src("a")}
	shared := &ir.Cluster{Name: "udproute:ns/r", Shares: []ir.Share{{Cluster: a.Name, Weight: 3, Source: src("a")}, {Cluster: "ns/b/53/udp", Weight: 1, Source: src("b")}}}
	twice := &ir.Cluster{Name: "udproute:ns/s", Shares: []ir.Share{{Weight: 1, Source: src("a")}, {Weight: 2, Source: src("a")}}}
	got := clustersByService([]*ir.Cluster{a, shared, twice})
	for svc, want := range map[string][]*ir.Cluster{"a": {a, shared, twice}, "b": {shared}} {
		list := got[types.NamespacedName{Namespace: "ns", Name: svc}]
		if len(list) != len(want) {
			t.Fatalf("Service %s: %d clusters, want %d", svc, len(list), len(want))
		}
		for i := range want {
			if list[i] != want[i] {
				t.Errorf("Service %s: cluster %d is %s, want %s", svc, i, list[i].Name, want[i].Name)
			}
		}
	}
}
