package envoyversion

import (
	"bufio"
	"embed"
	"fmt"
	"strings"
	"sync"

	"google.golang.org/protobuf/reflect/protoreflect"

	"isobar.dev/api/envoyrelease"
	"isobar.dev/api/imagetag"
)

// releases holds, for each release from envoyrelease.Oldest to the one
// before envoyrelease.Newest, the names Isobar sends (sent.txt) that its
// API has, as hack/envoyapi reads them from go-control-plane's envoy
// module of that release.
//
//go:embed releases/known-*.txt
var releases embed.FS

var known = sync.OnceValue(func() map[string]map[protoreflect.FullName]bool {
	out := map[string]map[protoreflect.FullName]bool{}
	for v := envoyrelease.Oldest; v.Less(envoyrelease.Newest); v.Minor++ {
		f, err := releases.Open(fmt.Sprintf("releases/known-v%d.%d.txt", v.Major, v.Minor))
		if err != nil {
			continue
		}
		names := map[protoreflect.FullName]bool{}
		s := bufio.NewScanner(f)
		for s.Scan() {
			if line := s.Text(); line != "" && !strings.HasPrefix(line, "#") {
				names[protoreflect.FullName(line)] = true
			}
		}
		f.Close()
		out[className(v)] = names
	}
	return out
})

// Knows reports whether Envoy of release v knows name (a field, a message
// packed in an Any, an enum value) of those Isobar sends. Newest and later
// know every one; a release before the oldest supported, none.
func Knows(v imagetag.Version, name protoreflect.FullName) bool {
	if !v.Less(imagetag.Version{Major: envoyrelease.Newest.Major, Minor: envoyrelease.Newest.Minor}) {
		return true
	}
	return known()[className(v)][name]
}
