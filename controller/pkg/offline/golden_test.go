package offline

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"isobar.dev/api/certrefs"
	"isobar.dev/api/v1alpha1"
	"isobar.dev/controller/pkg/resources"
)

var update = flag.Bool("update", false, "rewrite the golden files from the current output")

// TestGolden translates every testdata/*.in.yaml and compares the statuses
// and IR with *.out.yaml, and the Envoy resources with *.xds.yaml. Run with
// -update to rewrite them, then review the diff.
func TestGolden(t *testing.T) {
	inputs, err := filepath.Glob("testdata/*.in.yaml")
	if err != nil || len(inputs) == 0 {
		t.Fatalf("no golden inputs: %v", err)
	}
	for _, in := range inputs {
		name := strings.TrimSuffix(filepath.Base(in), ".in.yaml")
		t.Run(name, func(t *testing.T) {
			res, _, err := LoadFiles([]string{in}, "")
			if err != nil {
				t.Fatal(err)
			}
			out, envoy := translateAndRender(t, res)
			compare(t, "testdata/"+name+".out.yaml", out.Bytes())
			compare(t, "testdata/"+name+".xds.yaml", envoy.Bytes())
			// The live controller reads only the Secrets and ConfigMaps
			// certrefs names (its RBAC allows no others): with only those
			// the translation must be the same.
			out2, envoy2 := translateAndRender(t, onlyReferenced(res))
			if !bytes.Equal(out.Bytes(), out2.Bytes()) || !bytes.Equal(envoy.Bytes(), envoy2.Bytes()) {
				t.Errorf("with only the Secrets and ConfigMaps certrefs names, the translation differs: certrefs misses a reference the translator resolves.\n%s%s",
					firstDifference(out.Bytes(), out2.Bytes()), firstDifference(envoy.Bytes(), envoy2.Bytes()))
			}
		})
	}
}

func compare(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the output; run go test -update and review the diff.\n%s", path, firstDifference(want, got))
	}
}

// firstDifference shows the first line that differs, with context.
func firstDifference(want, got []byte) string {
	w, g := strings.Split(string(want), "\n"), strings.Split(string(got), "\n")
	for i := 0; i < len(w) || i < len(g); i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			return fmt.Sprintf("line %d:\n  want: %s\n  got:  %s", i+1, wl, gl)
		}
	}
	return ""
}

// translateAndRender translates res and renders the statuses and IR, and
// the Envoy resources.
func translateAndRender(t *testing.T, res *resources.Resources) (out, envoy *bytes.Buffer) {
	t.Helper()
	result, err := Translate(res, Options{})
	if err != nil {
		t.Fatal(err)
	}
	out, envoy = &bytes.Buffer{}, &bytes.Buffer{}
	for _, part := range []struct {
		buf   *bytes.Buffer
		types []string
	}{
		{out, []string{"status", "ir"}},
		{envoy, []string{"listeners", "routes", "clusters", "endpoints", "secrets", "runtime"}},
	} {
		for _, typ := range part.types {
			rendered, err := Render(result, typ, "yaml")
			if err != nil {
				t.Fatal(err)
			}
			part.buf.WriteString("# " + typ + "\n")
			part.buf.Write(rendered)
		}
	}
	return out, envoy
}

// onlyReferenced is res with only the Secrets and ConfigMaps that certrefs
// names for one of its Gateways.
func onlyReferenced(res *resources.Resources) *resources.Resources {
	want := map[certrefs.Ref]bool{}
	for _, gw := range res.Gateways {
		var fallback *v1alpha1.SecretReference
		if rs := validRuntimeSettings(res, types.NamespacedName{Namespace: gw.Namespace, Name: gw.Name}); rs != nil {
			fallback = rs.HTTPProxyOrDefault().FallbackCertificate
		}
		for _, r := range certrefs.Of(res.CertificateInput(gw, DefaultControllerName, fallback)) {
			want[r] = true
		}
	}
	out := *res
	out.Secrets = slices.DeleteFunc(slices.Clone(res.Secrets), func(s *corev1.Secret) bool {
		return !want[certrefs.Ref{Kind: certrefs.Secret, Namespace: s.Namespace, Name: s.Name}]
	})
	out.ConfigMaps = slices.DeleteFunc(slices.Clone(res.ConfigMaps), func(c *corev1.ConfigMap) bool {
		return !want[certrefs.Ref{Kind: certrefs.ConfigMap, Namespace: c.Namespace, Name: c.Name}]
	})
	return &out
}
