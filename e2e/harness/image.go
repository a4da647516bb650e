package harness

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// ImageBinary unpacks the entrypoint of an image archive (the `docker
// save` format make images writes, one image of one layer or more) into
// dir, as a container runtime would lay out the image's root, and returns
// the image's reference and the binary's path there: a Pod of that image
// is then played by what the image holds, not by a binary built apart.
func ImageBinary(archive, dir string) (ref, binary string, err error) {
	files, err := untar(archive)
	if err != nil {
		return "", "", err
	}
	var manifest []struct {
		Config   string
		RepoTags []string
		Layers   []string
	}
	if err := json.Unmarshal(files["manifest.json"], &manifest); err != nil {
		return "", "", fmt.Errorf("%s: manifest.json: %w", archive, err)
	}
	if len(manifest) != 1 || len(manifest[0].RepoTags) != 1 {
		return "", "", fmt.Errorf("%s: manifest.json does not name one image with one tag", archive)
	}
	var config struct {
		Config struct{ Entrypoint []string }
	}
	if err := json.Unmarshal(files[manifest[0].Config], &config); err != nil {
		return "", "", fmt.Errorf("%s: the image's configuration: %w", archive, err)
	}
	if len(config.Config.Entrypoint) == 0 {
		return "", "", fmt.Errorf("%s: the image's configuration has no entrypoint", archive)
	}
	entrypoint := strings.TrimPrefix(path.Clean(config.Config.Entrypoint[0]), "/")
	// The last layer holding the entrypoint is what the container sees.
	var data []byte
	for _, l := range manifest[0].Layers {
		layer, err := untarBytes(files[l])
		if err != nil {
			return "", "", fmt.Errorf("%s: layer %s: %w", archive, l, err)
		}
		if b, ok := layer[entrypoint]; ok {
			data = b
		}
	}
	if data == nil {
		return "", "", fmt.Errorf("%s: no layer holds the entrypoint /%s", archive, entrypoint)
	}
	binary = filepath.Join(dir, filepath.FromSlash(entrypoint))
	if err := os.MkdirAll(filepath.Dir(binary), 0o755); err != nil {
		return "", "", err
	}
	return manifest[0].RepoTags[0], binary, os.WriteFile(binary, data, 0o755)
}

func untar(file string) (map[string][]byte, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	return untarBytes(data)
}

// untarBytes holds a tar stream's regular files by name.
func untarBytes(data []byte) (map[string][]byte, error) {
	out := map[string][]byte{}
	r := tar.NewReader(bytes.NewReader(data))
	for {
		h, err := r.Next()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		b, err := io.ReadAll(r)
		if err != nil {
			return nil, err
		}
		out[strings.TrimPrefix(path.Clean(h.Name), "/")] = b
	}
}
