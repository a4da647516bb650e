// Command images builds Isobar's two images without a container daemon:
// the static binaries of isobar-operator and isobar-controller, each alone
// on an empty base as a non-root user, written as image archives that
// `kind load image-archive`, `docker load` and `crane push` take. With
// -deploy it writes a kustomization of config/default that runs them.
//
//	go run isobar.dev/hack/images -root . [-prefix REGISTRY/PATH] [-version vX.Y.Z] [-arch amd64] [-deploy]
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"

	"isobar.dev/api/release"
)

func main() {
	root := flag.String("root", ".", "the repository's root")
	prefix := flag.String("prefix", release.Registry, "registry and path of the images")
	version := flag.String("version", release.Version, "the release the binaries report and the images are tagged with")
	arch := flag.String("arch", runtime.GOARCH, "the images' architecture (linux/ARCH)")
	out := flag.String("out", "bin/images", "where the archives go, under -root")
	deploy := flag.Bool("deploy", false, "also write bin/deploy/kustomization.yaml: config/default with these images")
	bundle := flag.Bool("bundle", false, "build the OLM bundle image alone (bundle/, its CSV naming these images)")
	flag.Parse()
	if *bundle {
		b, err := BuildBundle(*root, Options{Prefix: *prefix, Version: *version, Arch: *arch}, filepath.Join(*root, *out))
		if err != nil {
			fmt.Fprintln(os.Stderr, "images:", err)
			os.Exit(1)
		}
		fmt.Printf("%s %s %s\n", b.Archive, b.Ref, b.Digest)
		return
	}
	fmt.Fprintf(os.Stderr, "images: building isobar-operator and isobar-controller for linux/%s (a first build takes minutes), then writing their archives into %s\n", *arch, *out)
	built, err := Build(*root, Options{Prefix: *prefix, Version: *version, Arch: *arch}, filepath.Join(*root, *out))
	if err != nil {
		fmt.Fprintln(os.Stderr, "images:", err)
		os.Exit(1)
	}
	for _, b := range built {
		fmt.Printf("%s %s %s\n", b.Archive, b.Ref, b.Digest)
	}
	if *deploy {
		dir := filepath.Join(*root, "bin", "deploy")
		if err := WriteDeploy(*root, dir, Options{Prefix: *prefix, Version: *version}); err != nil {
			fmt.Fprintln(os.Stderr, "images:", err)
			os.Exit(1)
		}
		fmt.Println("kubectl apply --server-side -k", dir)
	}
}
