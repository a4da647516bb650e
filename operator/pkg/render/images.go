package render

import (
	"fmt"

	"isobar.dev/api/envoyrelease"
	"isobar.dev/api/imagetag"
	"isobar.dev/api/release"
	"isobar.dev/api/v1alpha1"
)

// OldestEnvoy is the oldest Envoy release Isobar supports: the controller
// sends an Envoy only the fields its release knows, down to this one. An
// older Envoy may refuse, or read otherwise, fields Isobar sends.
var OldestEnvoy = envoyrelease.Oldest

// checkImages refuses a profile's images of a release Isobar cannot run
// with: an Envoy older than OldestEnvoy, and a controller of another
// release than the operator's, whose contract (flags, settings, the
// xDS it serves) changes with the release. An image whose tag names no
// release (a digest alone, a build's own tag) is not checked.
func checkImages(spec v1alpha1.ContourDeploymentSpec) error {
	if v, ok := imagetag.Of(spec.Envoy.Image); ok && v.Less(OldestEnvoy) {
		return fmt.Errorf("spec.envoy.image %q is Envoy %s, older than the oldest Envoy Isobar supports, v%d.%d", spec.Envoy.Image, v, OldestEnvoy.Major, OldestEnvoy.Minor)
	}
	ours, known := imagetag.Parse(release.Version)
	if v, ok := imagetag.Of(spec.Controller.Image); ok && known && v != ours {
		return fmt.Errorf("spec.controller.image %q is release %s, and this operator is release %s: the operator and the controller must be of one release", spec.Controller.Image, v, ours)
	}
	return nil
}
