package fleetreport

import (
	"reflect"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestCombine(t *testing.T) {
	tests := []struct {
		name   string
		own    Report
		others []Report
		want   Fleet
	}{{
		name: "the leader alone",
		own:  Report{Replica: "a", Connected: 2, Acknowledged: true, Holding: ptr(2), Generation: 3},
		want: Fleet{Connected: 2, Holding: 2, Acknowledged: true},
	}, {
		name:   "Envoys only on another replica count",
		own:    Report{Replica: "a", Acknowledged: true, Generation: 3},
		others: []Report{{Replica: "b", Connected: 1, Acknowledged: true, Generation: 3}},
		want:   Fleet{Connected: 1, Holding: 1, Acknowledged: true},
	}, {
		name:   "a replica of a release without holding: its Envoys hold the generation when acknowledged",
		own:    Report{Replica: "a", Connected: 1, Acknowledged: true, Generation: 3},
		others: []Report{{Replica: "b", Connected: 1, Generation: 3}},
		want:   Fleet{Connected: 2, Holding: 1},
	}, {
		name:   "a change in flight: Envoys not acknowledged still hold the generation",
		own:    Report{Replica: "a", Connected: 2, Holding: ptr(2), Generation: 3},
		others: []Report{{Replica: "b", Connected: 1, Holding: ptr(0), Generation: 3}},
		want:   Fleet{Connected: 3, Holding: 2},
	}, {
		name:   "rejections from every replica",
		own:    Report{Replica: "a", Connected: 1, Rejections: []string{"x"}, Generation: 3},
		others: []Report{{Replica: "b", Connected: 1, Rejections: []string{"y"}, Generation: 3}},
		want:   Fleet{Connected: 2, Rejections: []string{"x", "y"}},
	}, {
		name:   "a replica serving an older generation is behind",
		own:    Report{Replica: "a", Connected: 1, Acknowledged: true, Generation: 4},
		others: []Report{{Replica: "b", Connected: 1, Acknowledged: true, Generation: 3}, {Replica: "c", Acknowledged: true, Generation: 1}},
		want:   Fleet{Connected: 2, Holding: 2, Acknowledged: true, Behind: []string{"b"}},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Combine(tt.own, tt.others, tt.own.Generation); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Combine = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestExpired(t *testing.T) {
	now := time.Now()
	renewed := metav1.NewMicroTime(now.Add(-20 * time.Second))
	seconds := int32(30)
	short := int32(10)
	for _, tt := range []struct {
		spec coordinationv1.LeaseSpec
		want bool
	}{
		{coordinationv1.LeaseSpec{RenewTime: &renewed, LeaseDurationSeconds: &seconds}, false},
		{coordinationv1.LeaseSpec{RenewTime: &renewed, LeaseDurationSeconds: &short}, true},
		{coordinationv1.LeaseSpec{LeaseDurationSeconds: &seconds}, true},
	} {
		if got := expired(tt.spec, now); got != tt.want {
			t.Errorf("expired(%+v) = %v, want %v", tt.spec, got, tt.want)
		}
	}
}

func ptr(n int) *int { return &n }
