package envoysim

import (
	"math"
	"testing"
	"time"
)

func TestSlowStartWeight(t *testing.T) {
	s := &SlowStart{Window: time.Minute, Aggression: 1, MinWeightPercent: 10}
	for _, tc := range []struct {
		s    *SlowStart
		age  time.Duration
		want float64
	}{
		{s, 0, 0.1},
		{s, 3 * time.Second, 0.1},
		{s, 30 * time.Second, 0.5},
		{s, time.Minute, 1},
		{&SlowStart{Window: time.Minute, Aggression: 2, MinWeightPercent: 10}, 15 * time.Second, 0.5},
		{nil, 0, 1},
	} {
		if got := tc.s.Weight(tc.age); math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("%+v at %s: weight %g, want %g", tc.s, tc.age, got, tc.want)
		}
	}
}

// A new endpoint gets its slow start share of requests, the old ones the
// rest, over many seeds.
func TestPickLiveRampsNewEndpointsUp(t *testing.T) {
	b := &Backend{Endpoints: []string{"10.0.0.1:80", "10.0.0.2:80", "10.0.0.3:80"},
		SlowStart: &SlowStart{Window: time.Minute, Aggression: 1, MinWeightPercent: 10}}
	for _, tc := range []struct {
		age  time.Duration
		want float64 // the new endpoint's share
	}{{6 * time.Second, 0.1 / 2.1}, {30 * time.Second, 0.5 / 2.5}, {time.Hour, 1.0 / 3}} {
		age := func(e string) time.Duration {
			if e == "10.0.0.3:80" {
				return tc.age
			}
			return time.Duration(math.MaxInt64)
		}
		n, picked := 100000, 0
		for seed := range n {
			if b.PickLive(uint64(seed)*7919, nil, age) == "10.0.0.3:80" {
				picked++
			}
		}
		if got := float64(picked) / float64(n); math.Abs(got-tc.want) > 0.01 {
			t.Errorf("added %s ago: the new endpoint got %.3f of the requests, want %.3f", tc.age, got, tc.want)
		}
	}
}
