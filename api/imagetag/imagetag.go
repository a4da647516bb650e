// Package imagetag reads the release an image reference's tag names, such
// as v1.40.0 in docker.io/envoyproxy/envoy:distroless-v1.40.0: what the
// operator checks a profile's images against. A reference without a tag
// that names a release (a digest alone, "latest", a build's own tag) says
// nothing, and is not checked.
package imagetag

import (
	"fmt"
	"strconv"
	"strings"
)

// Version is a release's major, minor and patch numbers.
type Version struct{ Major, Minor, Patch int }

func (v Version) String() string { return fmt.Sprintf("v%d.%d.%d", v.Major, v.Minor, v.Patch) }

// Less reports whether v is an earlier release than o.
func (v Version) Less(o Version) bool {
	if v.Major != o.Major {
		return v.Major < o.Major
	}
	if v.Minor != o.Minor {
		return v.Minor < o.Minor
	}
	return v.Patch < o.Patch
}

// Of returns the release image's tag names, and whether it names one: the
// tag (after the last colon of the last path element, before any
// digest) ending in vMAJOR.MINOR.PATCH or MAJOR.MINOR.PATCH, with a prefix
// such as "distroless-" and without a suffix such as "-dev".
func Of(image string) (Version, bool) {
	ref, _, _ := strings.Cut(image, "@")
	name := ref[strings.LastIndex(ref, "/")+1:]
	i := strings.LastIndex(name, ":")
	if i < 0 {
		return Version{}, false
	}
	tag := name[i+1:]
	if j := strings.LastIndexAny(tag, "-_"); j >= 0 {
		tag = tag[j+1:]
	}
	parts := strings.Split(strings.TrimPrefix(tag, "v"), ".")
	if len(parts) != 3 {
		return Version{}, false
	}
	var n [3]int
	for k, p := range parts {
		v, err := strconv.Atoi(p)
		if err != nil || v < 0 || p != strconv.Itoa(v) {
			return Version{}, false
		}
		n[k] = v
	}
	return Version{n[0], n[1], n[2]}, true
}

// Parse is Of for a bare version, such as a release's "v0.1.0".
func Parse(version string) (Version, bool) { return Of("x:" + version) }
