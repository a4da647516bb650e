package envoysim

import "testing"

func TestPick(t *testing.T) {
	weighted := &Backend{Endpoints: []string{"a:1", "b:1", "c:1"}, Localities: []Locality{{Weight: 3, Endpoints: []string{"a:1", "b:1"}}, {Weight: 1, Endpoints: []string{"c:1"}}}}
	plain := &Backend{Endpoints: []string{"a:1", "b:1", "c:1", "d:1"}}
	for _, tc := range []struct {
		name string
		b    *Backend
		want map[string]int
	}{
		{"localities by weight, endpoints alike within", weighted, map[string]int{"a:1": 1500, "b:1": 1500, "c:1": 1000}},
		{"endpoints alike", plain, map[string]int{"a:1": 1000, "b:1": 1000, "c:1": 1000, "d:1": 1000}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := map[string]int{}
			for seed := range uint64(4000) {
				got[tc.b.Pick(seed)]++
			}
			for ep, n := range tc.want {
				if got[ep] != n {
					t.Errorf("%s picked %d times in 4000, want %d (all: %v)", ep, got[ep], n, got)
				}
			}
		})
	}
	if (&Backend{}).Pick(1) != "" {
		t.Error("a backend without endpoints picked one")
	}
}
