package contourconfig

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
)

// newerSettings are settings of Contour's main branch that the types of
// its newest release (the module Isobar builds with) do not have yet, by
// their path in a ContourConfiguration spec. Parse takes them out of an
// object before it decodes the rest strictly; Convert carries them with
// the others.
var newerSettings = map[string]bool{
	"envoy.listener.tls.fingerprint.ja3": true,
	"envoy.listener.tls.fingerprint.ja4": true,
}

// takeNewer removes the newer settings from spec (a ContourConfiguration
// spec, as YAML decodes it) and returns them as leaves, their values as
// JSON, nil when spec has none. A value of the wrong type, or a field
// beside them that Contour's main branch does not have either, is an
// error naming it.
func takeNewer(spec map[string]any) (map[string]string, error) {
	// Each newer setting is a boolean under envoy.listener.tls.fingerprint.
	tls, ok := dig(spec, "envoy", "listener", "tls")
	if !ok {
		return nil, nil
	}
	raw, ok := tls["fingerprint"]
	if !ok {
		return nil, nil
	}
	delete(tls, "fingerprint")
	out := map[string]string{}
	if raw == nil {
		return out, nil
	}
	m, ok := raw.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("envoy.listener.tls.fingerprint is not an object")
	}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		path := "envoy.listener.tls.fingerprint." + k
		if !newerSettings[path] {
			return nil, fmt.Errorf("unknown field %q", path)
		}
		if _, ok := m[k].(bool); !ok {
			return nil, fmt.Errorf("%s is not true or false", path)
		}
		b, _ := json.Marshal(m[k])
		out[path] = string(b)
	}
	return out, nil
}

// dig is the object at path under m, if every step is an object.
func dig(m map[string]any, path ...string) (map[string]any, bool) {
	for _, p := range path {
		next, ok := m[p].(map[string]any)
		if !ok {
			return nil, false
		}
		m = next
	}
	return m, true
}
