package envoyversion_test

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"isobar.dev/api/envoyrelease"
	"isobar.dev/api/imagetag"
	"isobar.dev/controller/pkg/bootstrap"
	"isobar.dev/controller/pkg/envoyversion"
	"isobar.dev/controller/pkg/offline"
)

var update = flag.Bool("update", false, "rewrite testdata/sent.txt from what the translator sends")

// TestFieldsSentAreVersioned walks every resource the translator sends for
// the offline goldens, and the bootstrap, and checks each field, Any type
// and enum value against the APIs of the releases from
// envoyrelease.Oldest on (releases/known-*.txt, written by hack/envoyapi
// from go-control-plane's envoy module of each release):
// one the oldest does not know must be in envoyversion.Newer, with the
// release that introduced it and the resource types it is sent in.
func TestFieldsSentAreVersioned(t *testing.T) {
	sent := map[protoreflect.FullName]map[string]bool{} // name -> resource types
	record := func(typ string, m proto.Message) {
		envoyversion.Walk(m, func(n protoreflect.FullName) {
			if sent[n] == nil {
				sent[n] = map[string]bool{}
			}
			sent[n][typ] = true
		})
	}
	inputs, err := filepath.Glob("../offline/testdata/*.in.yaml")
	if err != nil || len(inputs) == 0 {
		t.Fatalf("no golden inputs: %v", err)
	}
	for _, in := range inputs {
		res, _, err := offline.LoadFiles([]string{in}, "")
		if err != nil {
			t.Fatal(err)
		}
		result, err := offline.Translate(res, offline.Options{})
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range result.XDS {
			for typ, ms := range x.ByType() {
				for _, m := range ms {
					record(typ, m)
				}
			}
		}
	}
	b, sds, err := bootstrap.Build(bootstrap.Config{NodeID: "envoy-0", Cluster: "ns/gw", XDSAddress: "controller.ns.svc", XDSServerName: "controller.ns.svc",
		CertsDir: "/certs", OutputDir: "/config", MaxHeapBytes: 1 << 30})
	if err != nil {
		t.Fatal(err)
	}
	record("bootstrap", b)
	for _, m := range sds {
		record("bootstrap", m)
	}

	names := make([]string, 0, len(sent))
	for n := range sent {
		names = append(names, string(n))
	}
	slices.Sort(names)
	list := []byte(strings.Join(names, "\n") + "\n")
	const sentFile = "testdata/sent.txt"
	if *update {
		if err := os.WriteFile(sentFile, list, 0o644); err != nil {
			t.Fatal(err)
		}
	} else if want, err := os.ReadFile(sentFile); err != nil || !bytes.Equal(want, list) {
		t.Fatalf("%s is not what the translator sends (%v): run go test -update, then, for each release from %s to the one before %s, "+
			"go run isobar.dev/hack/envoyapi -version vX.Y.0 -in %s -out releases/known-vX.Y.txt; review the diff", sentFile, err, envoyrelease.Oldest, envoyrelease.Newest, sentFile)
	}

	var releases []imagetag.Version
	for v := envoyrelease.Oldest; v.Less(envoyrelease.Newest); v.Minor++ {
		releases = append(releases, v)
	}
	table := map[protoreflect.FullName]envoyversion.Field{}
	for _, f := range envoyversion.Newer {
		table[f.Name] = f
		if sent[f.Name] == nil {
			t.Errorf("envoyversion.Newer lists %s, which the translator does not send", f.Name)
		}
	}
	for _, name := range names {
		since := envoyrelease.Newest
		for i := len(releases) - 1; i >= 0 && envoyversion.Knows(releases[i], protoreflect.FullName(name)); i-- {
			since = releases[i]
		}
		f, listed := table[protoreflect.FullName(name)]
		switch {
		case since == envoyrelease.Oldest && listed:
			t.Errorf("envoyversion.Newer lists %s, which Envoy %s knows", name, envoyrelease.Oldest)
		case since != envoyrelease.Oldest && !listed:
			t.Errorf("%s is sent, and Envoy before %s does not know it: list it in envoyversion.Newer", name, since)
		case listed && f.Since != since:
			t.Errorf("envoyversion.Newer says %s is in Envoy since %s; its API has it since %s", name, f.Since, since)
		}
		if listed {
			var in []string
			for typ := range sent[protoreflect.FullName(name)] {
				in = append(in, typ)
			}
			slices.Sort(in)
			if got := slices.Sorted(slices.Values(f.In)); !slices.Equal(got, in) {
				t.Errorf("envoyversion.Newer says %s is sent in %v; it is sent in %v", name, got, in)
			}
		}
	}
}
