// Command bundle writes Isobar's OLM bundle (bundle/manifests,
// bundle/metadata, bundle.Dockerfile) from config/: it builds
// config/default with kustomize, turns the operator's Deployment, its
// ServiceAccount and ClusterRole into the ClusterServiceVersion's install
// strategy, and copies the CRD and the metrics Service. `make bundle` runs
// it; `make verify` fails when its output is stale.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
)

func main() {
	root := flag.String("root", ".", "the repository root")
	version := flag.String("version", "0.1.0", "the bundle's version")
	replaces := flag.String("replaces", "", "the CSV this one replaces, if any")
	flag.Parse()
	files, err := Generate(*root, Options{Version: *version, Replaces: *replaces})
	if err == nil {
		err = write(*root, files)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bundle:", err)
		os.Exit(1)
	}
}

// write replaces bundle/ and bundle.Dockerfile with files.
func write(root string, files map[string][]byte) error {
	if err := os.RemoveAll(filepath.Join(root, "bundle")); err != nil {
		return err
	}
	for name, data := range files {
		path := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(path, data, 0o644); err != nil {
			return err
		}
	}
	return nil
}
