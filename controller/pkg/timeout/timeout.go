// Package timeout parses timeouts as Contour writes them, in an
// HTTPProxy's timeout and retry policies and an Ingress's annotations:
// a Go duration, or "infinity" (or "infinite") for none at all.
package timeout

import (
	"fmt"
	"time"
)

// Parse returns 0 for "" or a zero duration (Envoy's default applies), a
// negative duration for "infinity" (the timeout is turned off), and the
// duration otherwise.
func Parse(s string) (time.Duration, error) {
	switch s {
	case "":
		return 0, nil
	case "infinity", "infinite":
		return -1, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("%q is not a duration", s)
	}
	return d, nil
}
