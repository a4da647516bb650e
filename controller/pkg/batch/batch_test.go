package batch

import (
	"context"
	"testing"
	"time"
)

// clock is a fake clock whose sleeps deliver the changes scheduled within
// them, at their times.
type clock struct {
	t       time.Duration
	changes []time.Duration
	b       *Batcher
}

func (c *clock) now() time.Time { return time.Unix(0, 0).Add(c.t) }

func (c *clock) sleep(_ context.Context, d time.Duration) error {
	end := c.t + d
	for len(c.changes) > 0 && c.changes[0] <= end {
		c.t = c.changes[0]
		c.changes = c.changes[1:]
		c.b.Changed()
	}
	c.t = end
	return nil
}

// passes runs a worker that waits and "translates" instantly, and returns
// when each pass started.
func passes(t *testing.T, delay, max time.Duration, changes []time.Duration) []time.Duration {
	t.Helper()
	b := &Batcher{Delay: delay, Max: max}
	c := &clock{changes: changes, b: b}
	b.Now, b.Sleep = c.now, c.sleep
	var out []time.Duration
	for len(c.changes) > 0 || b.pending {
		if !b.pending {
			// Idle until the next change.
			if err := c.sleep(context.Background(), c.changes[0]-c.t); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if _, err := b.Wait(context.Background()); err != nil {
			t.Fatal(err)
		}
		out = append(out, c.t)
	}
	return out
}

func every(step, until time.Duration) []time.Duration {
	var out []time.Duration
	for t := time.Duration(0); t < until; t += step {
		out = append(out, t)
	}
	return out
}

func TestBatcher(t *testing.T) {
	ms := time.Millisecond
	for _, tc := range []struct {
		name       string
		delay, max time.Duration
		changes    []time.Duration
		want       []time.Duration
	}{
		{"a change after quiet passes at once", 100 * ms, time.Second, []time.Duration{0}, []time.Duration{0}},
		{"the rest of a burst is one pass", 100 * ms, time.Second, []time.Duration{0, 10 * ms, 20 * ms, 90 * ms}, []time.Duration{0, 190 * ms}},
		{"quiet gaps make passes", 100 * ms, time.Second, []time.Duration{0, 500 * ms}, []time.Duration{0, 500 * ms}},
		{"a change within the delay of the last waits", 100 * ms, time.Second, []time.Duration{0, 150 * ms, 240 * ms}, []time.Duration{0, 150 * ms, 340 * ms}},
		// A change every 50ms never leaves 100ms of quiet: its first
		// passes at once; without max there would be one more pass at the
		// end; with it, one a second after the first change a pass has
		// not covered.
		{"a steady stream is cut at max", 100 * ms, time.Second, every(50*ms, 3*time.Second),
			[]time.Duration{0, 1050 * ms, 2100 * ms, 3050 * ms}},
		{"max zero leaves only the delay", 100 * ms, 0, every(50*ms, 1*time.Second), []time.Duration{0, 1050 * ms}},
		{"max shorter than the stream's gaps", 100 * ms, 300 * ms, every(50*ms, 1*time.Second),
			[]time.Duration{0, 350 * ms, 700 * ms, 1050 * ms}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := passes(t, tc.delay, tc.max, tc.changes)
			if len(got) != len(tc.want) {
				t.Fatalf("passes at %v, want %v", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Fatalf("passes at %v, want %v", got, tc.want)
				}
			}
		})
	}
}
