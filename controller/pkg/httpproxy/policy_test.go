package httpproxy

import (
	"testing"
	"time"
)

// Timeouts read as Contour's timeout.Parse: unset and zero are Envoy's
// default, "infinity" turns the timeout off.
func TestParseTimeout(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want time.Duration
		err  bool
	}{
		{"", 0, false},
		{"0s", 0, false},
		{"infinity", -1, false},
		{"infinite", -1, false},
		{"1m30s", 90 * time.Second, false},
		{"-1s", 0, true},
		{"forever", 0, true},
	} {
		got, err := parseTimeout(tc.in)
		if got != tc.want || (err != nil) != tc.err {
			t.Errorf("parseTimeout(%q) = %v, %v; want %v, error %t", tc.in, got, err, tc.want, tc.err)
		}
	}
}
