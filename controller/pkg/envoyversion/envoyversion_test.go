package envoyversion

import (
	"testing"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	"isobar.dev/api/imagetag"
)

func node(major, minor uint32) *corev3.Node {
	return &corev3.Node{Id: "envoy-0", UserAgentName: "envoy", UserAgentVersionType: &corev3.Node_UserAgentBuildVersion{
		UserAgentBuildVersion: &corev3.BuildVersion{Version: &typev3.SemanticVersion{MajorNumber: major, MinorNumber: minor, Patch: 2}}}}
}

func TestClass(t *testing.T) {
	for _, tc := range []struct {
		node *corev3.Node
		want string
	}{
		{node(1, 37), "v1.39"},
		{node(1, 38), "v1.39"},
		{node(1, 39), ""},
		{node(1, 40), ""},
		{node(1, 41), ""},
		{&corev3.Node{Id: "not-envoy"}, ""},
	} {
		v, ok := Of(tc.node)
		if got := Class(v, ok); got != tc.want {
			t.Errorf("Envoy %v (reported %t): class %q, want %q", v, ok, got, tc.want)
		}
	}
	if v, ok := Of(node(1, 37)); !ok || v != (imagetag.Version{Major: 1, Minor: 37, Patch: 2}) {
		t.Errorf("Of = %v %t", v, ok)
	}
	if Supported(imagetag.Version{Major: 1, Minor: 36, Patch: 9}) || !Supported(imagetag.Version{Major: 1, Minor: 37}) {
		t.Error("Supported does not start at v1.37")
	}
}

func TestStrip(t *testing.T) {
	budget := &clusterv3.Cluster{Name: "c", CircuitBreakers: &clusterv3.CircuitBreakers{Thresholds: []*clusterv3.CircuitBreakers_Thresholds{{
		RetryBudget: &clusterv3.CircuitBreakers_Thresholds_RetryBudget{BudgetPercent: &typev3.Percent{Value: 20}, BudgetInterval: durationpb.New(10e9)},
	}}}}
	plain := &clusterv3.Cluster{Name: "d"}

	got := Strip(resourcev3.ClusterType, budget, "v1.39").(*clusterv3.Cluster)
	if got == budget {
		t.Fatal("the cluster was not copied")
	}
	rb := got.GetCircuitBreakers().GetThresholds()[0].GetRetryBudget()
	if rb.GetBudgetInterval() != nil || rb.GetBudgetPercent().GetValue() != 20 || got.GetName() != "c" {
		t.Errorf("stripped for v1.39: %v", got)
	}
	if budget.GetCircuitBreakers().GetThresholds()[0].GetRetryBudget().GetBudgetInterval() == nil {
		t.Error("the original lost its interval")
	}
	for _, tc := range []struct {
		typ   string
		m     proto.Message
		class string
	}{
		{resourcev3.ClusterType, budget, ""},
		{resourcev3.ClusterType, plain, "v1.39"},
		{resourcev3.ListenerType, budget, "v1.39"},
	} {
		if Strip(tc.typ, tc.m, tc.class) != tc.m {
			t.Errorf("Strip(%s, %v, %q) copied what it need not", tc.typ, tc.m, tc.class)
		}
	}
}
