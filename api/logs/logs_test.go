package logs

import "testing"

func TestNew(t *testing.T) {
	for _, tc := range []struct {
		level, format string
		ok            bool
	}{
		{"info", JSON, true},
		{"debug", Console, true},
		{"warn", JSON, true},
		{"error", JSON, true},
		{"trace", JSON, false},
		{"fatal", JSON, false},
		{"info", "xml", false},
	} {
		_, err := New(tc.level, tc.format)
		if (err == nil) != tc.ok {
			t.Errorf("New(%q, %q) error = %v, want ok=%v", tc.level, tc.format, err, tc.ok)
		}
	}
}
