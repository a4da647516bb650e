package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"sigs.k8s.io/yaml"

	"isobar.dev/api/release"
)

// bundleName is the OLM bundle image's name beside the two images.
const bundleName = "isobar-operator-bundle"

// BuildBundle writes the OLM bundle image (what bundle.Dockerfile
// describes: bundle/manifests and bundle/metadata at the root, with the
// bundle's labels) into out, its CSV running the images opts names
// instead of the committed release's.
func BuildBundle(root string, opts Options, out string) (Built, error) {
	var files []file
	for _, dir := range []string{"manifests", "metadata"} {
		files = append(files, file{name: dir + "/", dir: true, mode: 0o755})
		err := filepath.WalkDir(filepath.Join(root, "bundle", dir), func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			files = append(files, file{name: dir + "/" + d.Name(), mode: 0o644, data: withImages(data, opts)})
			return nil
		})
		if err != nil {
			return Built{}, err
		}
	}
	slices.SortFunc(files, func(a, b file) int { return strings.Compare(a.name, b.name) })
	var meta struct {
		Annotations map[string]string `json:"annotations"`
	}
	if err := yaml.Unmarshal(readFile(files, "metadata/annotations.yaml"), &meta); err != nil {
		return Built{}, fmt.Errorf("bundle/metadata/annotations.yaml: %w", err)
	}
	if len(meta.Annotations) == 0 {
		return Built{}, fmt.Errorf("bundle/metadata/annotations.yaml has no annotations: the bundle image's labels come from it")
	}
	ref := opts.Prefix + "/" + bundleName + ":" + opts.Version
	if err := os.MkdirAll(out, 0o755); err != nil {
		return Built{}, err
	}
	archive := filepath.Join(out, bundleName+"-"+opts.Version+".tar")
	var cfg Config
	cfg.Architecture, cfg.OS = opts.Arch, "linux"
	cfg.Config.Labels = meta.Annotations
	digest, err := writeImage(archive, ref, files, cfg)
	if err != nil {
		return Built{}, fmt.Errorf("%s: %w", archive, err)
	}
	return Built{Name: bundleName, Archive: archive, Ref: ref, Digest: digest}, nil
}

// withImages is a bundle file naming the images opts builds where it
// names the release's.
func withImages(data []byte, opts Options) []byte {
	for _, b := range binaries {
		data = bytes.ReplaceAll(data, []byte(release.Registry+"/"+b.name+":"+release.Version), []byte(opts.Prefix+"/"+b.name+":"+opts.Version))
	}
	return data
}

func readFile(files []file, name string) []byte {
	for _, f := range files {
		if f.name == name {
			return f.data
		}
	}
	return nil
}

// writeImage writes an image of one layer of files, with configuration
// cfg, as an archive `docker load`, `kind load image-archive` and `crane
// push` read; the image's ID is returned.
func writeImage(path, ref string, files []file, cfg Config) (string, error) {
	layer, err := tarOf(files)
	if err != nil {
		return "", err
	}
	layerDigest := sha256.Sum256(layer)
	cfg.RootFS.Type, cfg.RootFS.DiffIDs = "layers", []string{"sha256:" + hex.EncodeToString(layerDigest[:])}
	config, err := json.Marshal(cfg)
	if err != nil {
		return "", err
	}
	configDigest := sha256.Sum256(config)
	configName := hex.EncodeToString(configDigest[:]) + ".json"
	layerName := hex.EncodeToString(layerDigest[:]) + "/layer.tar"
	manifest, err := json.Marshal([]Manifest{{Config: configName, RepoTags: []string{ref}, Layers: []string{layerName}}})
	if err != nil {
		return "", err
	}
	archive, err := tarOf([]file{
		{name: configName, mode: 0o644, data: config},
		{name: hex.EncodeToString(layerDigest[:]) + "/", dir: true, mode: 0o755},
		{name: layerName, mode: 0o644, data: layer},
		{name: "manifest.json", mode: 0o644, data: manifest},
	})
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(path, archive, 0o644); err != nil {
		return "", err
	}
	return "sha256:" + hex.EncodeToString(configDigest[:]), nil
}
