// Package envoyruntime is the contract between the profile's Envoy
// runtime overrides (envoy.runtime), which the operator passes to each
// Envoy's bootstrap, and the bootstrap, which writes them into Envoy's
// static runtime layer: which keys and values are allowed. It also names
// the runtime layer the controller serves over RTDS, which every
// bootstrap subscribes to, and the keys the controller sets in it.
package envoyruntime

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"unicode"
)

// MaxRequestsPerIOCycle is the runtime key the profile's
// envoy.maxRequestsPerIOCycle sets.
const MaxRequestsPerIOCycle = "http.max_requests_per_io_cycle"

// Layer is the name of the Runtime resource the controller serves and of
// the bootstrap's RTDS layer that takes it. The layer is the bootstrap's
// last, so its keys override the static layer's. Envoy waits for it (up
// to its initial fetch timeout) before it asks for clusters and
// listeners, so a limit holds from an Envoy's first connection.
const Layer = "isobar-dynamic"

// ListenerConnectionLimit is the runtime key that limits the connections
// of the listener named listener (Envoy's
// envoy.resource_limits.listener.<name>.connection_limit).
func ListenerConnectionLimit(listener string) string {
	return "envoy.resource_limits.listener." + listener + ".connection_limit"
}

// key is what Envoy's runtime keys look like: dotted names.
var key = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]*$`)

// Check refuses runtime overrides Envoy would not read as meant: a key
// that is not a dotted name, a key or value too long, a control
// character, or a key a setting of its own sets.
func Check(rt map[string]string) error {
	for _, k := range slices.Sorted(maps.Keys(rt)) {
		v := rt[k]
		switch {
		case !key.MatchString(k) || len(k) > 256:
			return fmt.Errorf("runtime key %q is not a dotted name of at most 256 characters", k)
		case k == MaxRequestsPerIOCycle:
			return fmt.Errorf("runtime key %s is set by maxRequestsPerIOCycle", k)
		case len(v) > 256 || strings.ContainsFunc(v, unicode.IsControl):
			return fmt.Errorf("runtime key %s: the value is not text of at most 256 characters", k)
		}
	}
	return nil
}
