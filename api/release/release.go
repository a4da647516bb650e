// Package release names the release this tree builds: the version the
// binaries report and the images are tagged with, and so the
// isobar-controller image the operator deploys unless told otherwise.
package release

// Version is this tree's release. make images sets it at link time
// (-X isobar.dev/api/release.Version=...) to the version it tags.
var Version = "v0.1.0"

// Registry is where released images are published.
const Registry = "ghcr.io/isobar-dev"

// Image is the reference of one of the release's images under prefix (a
// registry and path, such as Registry).
func Image(prefix, name string) string {
	return prefix + "/" + name + ":" + Version
}
