package main

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// The archives hold images whose entrypoint is their binary, run by a
// non-root user, and whose binary runs and reports the release; the
// deploy kustomization runs them.
func TestImages(t *testing.T) {
	if testing.Short() {
		t.Skip("builds both binaries")
	}
	if runtime.GOOS != "linux" {
		t.Skip("runs the images' linux binaries")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	opts := Options{Prefix: "registry.example.com/team", Version: "v9.8.7", Arch: runtime.GOARCH}
	built, err := Build(root, opts, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range built {
		t.Run(b.Name, func(t *testing.T) {
			files := readTar(t, b.Archive)
			var manifests []Manifest
			if err := json.Unmarshal(files["manifest.json"], &manifests); err != nil || len(manifests) != 1 {
				t.Fatalf("manifest.json: %v, %d images", err, len(manifests))
			}
			m := manifests[0]
			if !slices.Equal(m.RepoTags, []string{b.Ref}) {
				t.Errorf("tags %v, want %s", m.RepoTags, b.Ref)
			}
			config := files[m.Config]
			if sum := sha256.Sum256(config); m.Config != hex.EncodeToString(sum[:])+".json" || b.Digest != "sha256:"+hex.EncodeToString(sum[:]) {
				t.Errorf("config %s, image %s: not the configuration's digest", m.Config, b.Digest)
			}
			var cfg Config
			if err := json.Unmarshal(config, &cfg); err != nil {
				t.Fatal(err)
			}
			if want := []string{"/" + b.Name}; !slices.Equal(cfg.Config.Entrypoint, want) {
				t.Errorf("entrypoint %v, want %v", cfg.Config.Entrypoint, want)
			}
			if u := cfg.Config.User; u == "" || u == "0" || strings.HasPrefix(u, "0:") || u == "root" {
				t.Errorf("user %q: the image runs as root", u)
			}
			if cfg.OS != "linux" || cfg.Architecture != opts.Arch {
				t.Errorf("platform %s/%s, want linux/%s", cfg.OS, cfg.Architecture, opts.Arch)
			}
			if len(m.Layers) != 1 || len(cfg.RootFS.DiffIDs) != 1 {
				t.Fatalf("layers %v, diff IDs %v: want one", m.Layers, cfg.RootFS.DiffIDs)
			}
			layer := files[m.Layers[0]]
			if sum := sha256.Sum256(layer); cfg.RootFS.DiffIDs[0] != "sha256:"+hex.EncodeToString(sum[:]) {
				t.Errorf("the layer's digest is not its diff ID %s", cfg.RootFS.DiffIDs[0])
			}
			bin := filepath.Join(t.TempDir(), b.Name)
			inLayer := readTarBytes(t, layer)
			data, ok := inLayer[b.Name]
			if !ok {
				t.Fatalf("the layer has no /%s: %v", b.Name, keys(inLayer))
			}
			if err := os.WriteFile(bin, data, 0o755); err != nil {
				t.Fatal(err)
			}
			out, err := exec.Command(bin, "--version").CombinedOutput()
			if err != nil {
				t.Fatalf("%s --version: %v\n%s", b.Name, err, out)
			}
			if !strings.HasPrefix(string(out), b.Name+" "+opts.Version) {
				t.Errorf("%s --version says %q, want %s %s", b.Name, out, b.Name, opts.Version)
			}
		})
	}

	dir := t.TempDir()
	if err := WriteDeploy(root, dir, opts); err != nil {
		t.Fatal(err)
	}
	resources, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, r := range resources.Resources() {
		if r.GetKind() != "Deployment" || r.GetName() != "isobar-operator" {
			continue
		}
		found = true
		y, err := r.AsYAML()
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"image: registry.example.com/team/isobar-operator:v9.8.7", "--controller-image=registry.example.com/team/isobar-controller:v9.8.7"} {
			if !bytes.Contains(y, []byte(want)) {
				t.Errorf("the operator's Deployment does not say %s:\n%s", want, y)
			}
		}
	}
	if !found {
		t.Error("the deploy kustomization has no isobar-operator Deployment")
	}
}

func readTar(t *testing.T, path string) map[string][]byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return readTarBytes(t, data)
}

// readTarBytes returns a tar stream's regular files by name.
func readTarBytes(t *testing.T, data []byte) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	tr := tar.NewReader(bytes.NewReader(data))
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		if h.Mode&0o111 == 0 && !strings.Contains(h.Name, ".") && !strings.HasSuffix(h.Name, "layer.tar") {
			t.Errorf("%s is not executable (mode %o)", h.Name, h.Mode)
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		out[h.Name] = b
	}
}

func keys(m map[string][]byte) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// The bundle image is bundle/ as bundle.Dockerfile lays it out, with the
// bundle's labels, its CSV naming the images built with it.
func TestBundleImage(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	opts := Options{Prefix: "registry.example.com/team", Version: "v9.8.7", Arch: "amd64"}
	b, err := BuildBundle(root, opts, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if b.Ref != "registry.example.com/team/isobar-operator-bundle:v9.8.7" {
		t.Errorf("ref %s", b.Ref)
	}
	files := readTar(t, b.Archive)
	var manifests []Manifest
	if err := json.Unmarshal(files["manifest.json"], &manifests); err != nil || len(manifests) != 1 || len(manifests[0].Layers) != 1 {
		t.Fatalf("manifest.json: %v, %v", err, manifests)
	}
	var cfg Config
	if err := json.Unmarshal(files[manifests[0].Config], &cfg); err != nil {
		t.Fatal(err)
	}
	if cfg.Config.Labels["operators.operatorframework.io.bundle.mediatype.v1"] != "registry+v1" || cfg.Config.Labels["operators.operatorframework.io.bundle.package.v1"] != "isobar" {
		t.Errorf("labels %v, want the bundle's annotations", cfg.Config.Labels)
	}
	layer := readTarBytes(t, files[manifests[0].Layers[0]])
	csv := string(layer["manifests/isobar.clusterserviceversion.yaml"])
	for _, want := range []string{"image: registry.example.com/team/isobar-operator:v9.8.7", "--controller-image=registry.example.com/team/isobar-controller:v9.8.7"} {
		if !strings.Contains(csv, want) {
			t.Errorf("the CSV does not say %s", want)
		}
	}
	if strings.Contains(csv, "ghcr.io/isobar-dev/isobar-") {
		t.Error("the CSV still names the release's images")
	}
	if _, ok := layer["metadata/annotations.yaml"]; !ok {
		t.Errorf("no metadata/annotations.yaml in %v", keys(layer))
	}
}
