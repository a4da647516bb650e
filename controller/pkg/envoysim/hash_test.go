package envoysim

import (
	"strconv"
	"testing"
)

// A ring hash spreads keys over every endpoint, and an endpoint that goes
// takes only its own keys elsewhere: the others stay where they were.
func TestRingPick(t *testing.T) {
	eps := []string{"10.0.0.1:80", "10.0.0.2:80", "10.0.0.3:80", "10.0.0.4:80"}
	const keys = 1000
	count := map[string]int{}
	for i := range keys {
		k := fnv64("user" + strconv.Itoa(i))
		got := ringPick(eps, k)
		count[got]++
		if again := ringPick(eps, k); again != got {
			t.Fatalf("key %d picks %s, then %s", i, got, again)
		}
		if without := ringPick(eps[:3], k); got != eps[3] && without != got {
			t.Errorf("key %d moved from %s to %s when %s went", i, got, without, eps[3])
		}
	}
	for _, e := range eps {
		if count[e] < keys/8 {
			t.Errorf("endpoint %s got %d of %d keys: %v", e, count[e], keys, count)
		}
	}
}
