// Command docs writes the generated pages of docs/: the ContourDeployment
// reference from the CRD's schema (which the Go types' comments become),
// and the Gateway API feature table from what the controller reports in
// GatewayClass status. `make docs` runs it; `make verify` fails when its
// output is stale.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
)

func main() {
	root := flag.String("root", ".", "the repository root")
	flag.Parse()
	pages, err := Generate(*root)
	if err == nil {
		for name, data := range pages {
			path := filepath.Join(*root, name)
			if err = os.MkdirAll(filepath.Dir(path), 0o755); err == nil {
				err = os.WriteFile(path, data, 0o644)
			}
			if err != nil {
				break
			}
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "docs:", err)
		os.Exit(1)
	}
}
