// Command contourcrds copies Contour's HTTPProxy, TLSCertificateDelegation
// and ExtensionService CRDs, as the Contour release the workspace
// requires publishes them, into config/crd/contour: the CRDs always match
// the Go types the controller reads them with. It writes the defaults of
// their schemas into the controller's offline loader too
// (controller/pkg/resources), which applies them as the API server does.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
)

// wanted are the CRDs Isobar serves, by name.
var wanted = []string{"httpproxies.projectcontour.io", "tlscertificatedelegations.projectcontour.io", "extensionservices.projectcontour.io"}

func main() {
	root := flag.String("root", ".", "the repository's root")
	flag.Parse()
	if err := run(*root); err != nil {
		log.Fatal(err)
	}
}

func run(root string) error {
	cmd := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/projectcontour/contour")
	cmd.Dir = filepath.Join(root, "controller")
	out, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("locating the contour module: %w", err)
	}
	src := filepath.Join(strings.TrimSpace(string(out)), "examples", "contour", "01-crds.yaml")
	data, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	dir := filepath.Join(root, "config", "crd", "contour")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	defaults := map[string][]fieldDefault{}
	name := regexp.MustCompile(`(?m)^  name: (\S+)$`)
	found := map[string]bool{}
	for _, doc := range bytes.Split(data, []byte("\n---\n")) {
		m := name.FindSubmatch(doc)
		if m == nil || !bytes.Contains(doc, []byte("kind: CustomResourceDefinition")) {
			continue
		}
		crd := string(m[1])
		for _, w := range wanted {
			if crd != w {
				continue
			}
			found[w] = true
			doc = append(bytes.TrimPrefix(bytes.TrimSpace(doc), []byte("---\n")), '\n')
			file := filepath.Join(dir, "projectcontour.io_"+strings.SplitN(w, ".", 2)[0]+".yaml")
			if err := os.WriteFile(file, doc, 0o644); err != nil {
				return err
			}
			if err := collectDefaults(doc, defaults); err != nil {
				return fmt.Errorf("%s: %w", w, err)
			}
		}
	}
	for _, w := range wanted {
		if !found[w] {
			return fmt.Errorf("%s has no CRD %s", src, w)
		}
	}
	return writeDefaults(root, defaults)
}
