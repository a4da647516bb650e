package main

import (
	"archive/tar"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"
)

// Options say which images to build.
type Options struct {
	// Prefix is the images' registry and path; Version their tag and
	// the release the binaries report.
	Prefix, Version string
	// Arch is the images' linux architecture.
	Arch string
}

// binaries are the images: each runs one binary of the repository.
var binaries = []struct{ name, pkg string }{
	{"isobar-operator", "isobar.dev/operator/cmd/isobar-operator"},
	{"isobar-controller", "isobar.dev/controller/cmd/isobar-controller"},
}

// nonRoot is distroless's nonroot user and group: the fleet's and the
// operator's pods run as it.
const nonRoot = "65532:65532"

// Built is an image written as an archive.
type Built struct {
	Name, Archive, Ref string
	// Digest is the image's ID: the digest of its configuration.
	Digest string
}

// Build compiles the binaries for linux/opts.Arch, statically and with
// opts.Version as their release, and writes an image of each into out.
func Build(root string, opts Options, out string) ([]Built, error) {
	tmp, err := os.MkdirTemp("", "isobar-images")
	if err != nil {
		return nil, err
	}
	defer func() { _ = os.RemoveAll(tmp) }()
	args := []string{"build", "-trimpath", "-tags", "vtprotobuf", "-ldflags", "-s -w -X isobar.dev/api/release.Version=" + opts.Version, "-o", tmp + string(os.PathSeparator)}
	for _, b := range binaries {
		args = append(args, b.pkg)
	}
	cmd := exec.Command("go", args...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+opts.Arch)
	if o, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("building the binaries: %w\n%s", err, o)
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return nil, err
	}
	var built []Built
	for _, b := range binaries {
		bin, err := os.ReadFile(filepath.Join(tmp, b.name))
		if err != nil {
			return nil, err
		}
		ref := opts.Prefix + "/" + b.name + ":" + opts.Version
		archive := filepath.Join(out, b.name+"-"+opts.Version+".tar")
		digest, err := writeArchive(archive, ref, b.name, bin, opts)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", archive, err)
		}
		built = append(built, Built{Name: b.name, Archive: archive, Ref: ref, Digest: digest})
	}
	return built, nil
}

// Config is the part of an image's configuration (the OCI image spec's)
// that Isobar's images set.
type Config struct {
	Architecture string `json:"architecture"`
	OS           string `json:"os"`
	Config       struct {
		Entrypoint []string          `json:"Entrypoint"`
		User       string            `json:"User"`
		WorkingDir string            `json:"WorkingDir"`
		Labels     map[string]string `json:"Labels"`
	} `json:"config"`
	RootFS struct {
		Type    string   `json:"type"`
		DiffIDs []string `json:"diff_ids"`
	} `json:"rootfs"`
}

// Manifest is an entry of an archive's manifest.json, the format of
// `docker save` that `docker load`, `kind load image-archive` (through
// containerd) and `crane push` read.
type Manifest struct {
	Config   string   `json:"Config"`
	RepoTags []string `json:"RepoTags"`
	Layers   []string `json:"Layers"`
}

// writeArchive writes an image of one layer, the binary alone on an empty
// base as distroless/static has it: at the root, run as its entrypoint by
// the non-root user, with a /tmp. Timestamps are zero, so that the same
// binary makes the same image; the image's ID is returned.
func writeArchive(path, ref, name string, bin []byte, opts Options) (string, error) {
	var cfg Config
	cfg.Architecture, cfg.OS = opts.Arch, "linux"
	cfg.Config.Entrypoint, cfg.Config.User, cfg.Config.WorkingDir = []string{"/" + name}, nonRoot, "/"
	cfg.Config.Labels = map[string]string{
		"org.opencontainers.image.title":   name,
		"org.opencontainers.image.version": opts.Version,
		"org.opencontainers.image.source":  "https://github.com/isobar-dev/isobar",
	}
	return writeImage(path, ref, []file{{name: "tmp/", dir: true, mode: 0o1777}, {name: name, mode: 0o755, data: bin}}, cfg)
}

type file struct {
	name string
	dir  bool
	mode int64
	data []byte
}

// tarOf is a tar stream of files, owned by root, at the epoch.
func tarOf(files []file) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range files {
		h := &tar.Header{Name: f.name, Mode: f.mode, Size: int64(len(f.data)), ModTime: time.Unix(0, 0), Typeflag: tar.TypeReg, Format: tar.FormatPAX}
		if f.dir {
			h.Typeflag, h.Size = tar.TypeDir, 0
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(f.data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
