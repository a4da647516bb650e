// Package envoyrelease says which Envoy releases Isobar supports: the
// operator refuses a profile's Envoy image older than Oldest, and the
// controller serves each Envoy only fields its release knows
// (controller/pkg/envoyversion holds the table of those newer than
// Oldest).
package envoyrelease

import "isobar.dev/api/imagetag"

var (
	// Newest is the release whose API Isobar is built against
	// (go-control-plane's envoy module) and whose data plane its tests
	// simulate: the operator's default Envoy image.
	Newest = imagetag.Version{Major: 1, Minor: 40}
	// Oldest is the oldest release supported: the last four minor
	// releases, Newest's included.
	Oldest = imagetag.Version{Major: 1, Minor: 37}
)
