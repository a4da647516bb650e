package dataplane

import (
	"testing"

	"isobar.dev/controller/pkg/envoysim"
)

// An endpoint is pending until its first check, which decides; then it
// takes Unhealthy failures in a row to go and Healthy successes in a row
// to come back.
func TestHealthThresholds(t *testing.T) {
	c := &checkedCluster{check: envoysim.HealthCheck{Unhealthy: 2, Healthy: 3}, hosts: map[string]*hostHealth{"a": {}, "b": {}}}
	healthy := func(e string) bool { return c.hosts[e].healthy }
	for _, step := range []struct {
		host string
		ok   bool
		want bool
	}{
		{"a", true, true}, // first success: in at once
		{"b", false, false},
		{"a", false, true}, // one failure of two
		{"a", true, true},  // a success resets the count
		{"a", false, true},
		{"a", false, false}, // two in a row
		{"a", true, false},
		{"a", true, false},
		{"a", true, true}, // three in a row
		{"b", true, false},
		{"b", false, false}, // a failure resets the successes
	} {
		c.record(step.host, step.ok)
		if got := healthy(step.host); got != step.want {
			t.Fatalf("%s after a check that passed: %t: healthy %t, want %t", step.host, step.ok, got, step.want)
		}
	}
}
