// Package envoyversion keeps every Envoy release Isobar supports served
// only fields it knows. The controller is upgraded before its Envoys (and
// a fleet may run Envoys of several releases while they roll), so an
// Envoy can be older than the API Isobar is built against: Newer lists,
// in one place, each field Isobar sends that an Envoy of
// envoyrelease.Oldest does not know, with the release that introduced
// it; the xDS server sends an older Envoy its resources without them
// (Strip). TestFieldsSentAreVersioned (this package's tests) checks the table
// against what the translator sends and against the earlier releases'
// APIs, so a new field cannot be sent unlisted.
package envoyversion

import (
	"fmt"
	"slices"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"google.golang.org/protobuf/reflect/protoreflect"

	"isobar.dev/api/envoyrelease"
	"isobar.dev/api/imagetag"
)

// Field is a field newer than the oldest Envoy supported.
type Field struct {
	// Name is the field's full name.
	Name protoreflect.FullName
	// Since is the release that introduced it.
	Since imagetag.Version
	// In are the resource types (type URLs) Isobar sends it in; Strip
	// looks for it only there.
	In []string
	// Without says what an Envoy before Since does without the field, the
	// reason leaving it out is correct for such an Envoy.
	Without string
}

// Newer are the fields Isobar sends that envoyrelease.Oldest does not
// know.
var Newer = []Field{{
	Name:  "envoy.config.cluster.v3.CircuitBreakers.Thresholds.RetryBudget.budget_interval",
	Since: imagetag.Version{Major: 1, Minor: 39},
	In:    []string{resourcev3.ClusterType},
	Without: "the retry budget counts only the requests active now, not those of the last interval: " +
		"XBackendTrafficPolicy retryConstraint.budget.interval has no effect on Envoys before v1.39",
}}

// Since is the release that introduced a field Isobar sends: its entry in
// Newer, or the oldest release supported, which knows every other.
func Since(name protoreflect.FullName) imagetag.Version {
	for _, f := range Newer {
		if f.Name == name {
			return f.Since
		}
	}
	return envoyrelease.Oldest
}

// Of returns the release an Envoy reports in its node, and whether it
// reports one (every Envoy does; an xDS client that is not Envoy may not).
func Of(node *corev3.Node) (imagetag.Version, bool) {
	v := node.GetUserAgentBuildVersion().GetVersion()
	if v == nil {
		return imagetag.Version{}, false
	}
	return imagetag.Version{Major: int(v.GetMajorNumber()), Minor: int(v.GetMinorNumber()), Patch: int(v.GetPatch())}, true
}

// Class is what an Envoy of release v must be served without: "" for
// nothing (a release that knows every field Isobar sends, or one that
// reports none), otherwise the release of the oldest field it lacks, as
// "v1.39". Envoys of one class are served alike.
func Class(v imagetag.Version, known bool) string {
	if !known {
		return ""
	}
	var oldest *imagetag.Version
	for _, f := range Newer {
		if v.Less(f.Since) && (oldest == nil || f.Since.Less(*oldest)) {
			oldest = &f.Since
		}
	}
	if oldest == nil {
		return ""
	}
	return className(*oldest)
}

// Classes are every class there is but "": those the xDS server keeps a
// stripped copy of the configuration for.
func Classes() []string {
	var out []string
	for _, f := range Newer {
		if c := className(f.Since); !slices.Contains(out, c) {
			out = append(out, c)
		}
	}
	return out
}

func className(v imagetag.Version) string { return fmt.Sprintf("v%d.%d", v.Major, v.Minor) }

// Supported reports whether Isobar serves an Envoy of release v.
func Supported(v imagetag.Version) bool { return !v.Less(envoyrelease.Oldest) }
