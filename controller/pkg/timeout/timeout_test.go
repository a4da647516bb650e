package timeout

import (
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"", 0, true},
		{"0s", 0, true},
		{"90s", 90 * time.Second, true},
		{"1m30s", 90 * time.Second, true},
		{"infinity", -1, true},
		{"infinite", -1, true},
		{"-1s", 0, false},
		{"90", 0, false},
		{"forever", 0, false},
	} {
		got, err := Parse(tc.in)
		if got != tc.want || (err == nil) != tc.ok {
			t.Errorf("Parse(%q) = %v, %v; want %v, ok %t", tc.in, got, err, tc.want, tc.ok)
		}
	}
}
