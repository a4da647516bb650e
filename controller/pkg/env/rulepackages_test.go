package env_test

import (
	"go/types"
	"os"
	"slices"
	"strings"
	"testing"

	"golang.org/x/tools/go/packages"
)

// rulePackages are the packages of rules: they read the snapshot only
// through an env.Env.
var rulePackages = []string{
	"isobar.dev/controller/pkg/backendtls",
	"isobar.dev/controller/pkg/ingress",
	"isobar.dev/controller/pkg/httpproxy",
}

// Rule packages import neither the snapshot nor the engine, so they cannot
// name either; nothing they import, directly or not, is a Kubernetes
// client. (Package env itself imports the snapshot, to index it.)
var (
	forbiddenImports     = []string{"isobar.dev/controller/pkg/resources", "isobar.dev/controller/pkg/gatewayapi", "isobar.dev/controller/pkg/engine"}
	forbiddenTransitives = []string{"k8s.io/client-go", "sigs.k8s.io/controller-runtime"}
)

// A rule package cannot import the snapshot, and does not name the Index
// (whose Class and EndpointSlices do not record): whatever it reads of
// the snapshot it reads through an Env, so a read the engine does not know
// of cannot be written there. The test fails on an import of the snapshot
// or the engine, on a Kubernetes client among all its imports, and on any
// use of Index or NewIndex.
func TestRulePackagesReadOnlyThroughEnv(t *testing.T) {
	if testing.Short() {
		t.Skip("loads the packages with go list")
	}
	cfg := &packages.Config{Mode: packages.NeedName | packages.NeedImports | packages.NeedDeps | packages.NeedTypes | packages.NeedTypesInfo | packages.NeedSyntax, Dir: "."}
	pkgs, err := packages.Load(cfg, rulePackages...)
	if err != nil {
		t.Fatal(err)
	}
	if packages.PrintErrors(pkgs) > 0 {
		t.Fatal("the rule packages did not load")
	}
	if len(pkgs) != len(rulePackages) {
		t.Fatalf("loaded %d packages, want %d", len(pkgs), len(rulePackages))
	}
	for _, p := range pkgs {
		for path := range p.Imports {
			if slices.Contains(forbiddenImports, path) {
				t.Errorf("%s imports %s: a rule reads the snapshot only through an env.Env", p.PkgPath, path)
			}
		}
		for _, path := range importPaths(p) {
			for _, bad := range forbiddenTransitives {
				if path == bad || strings.HasPrefix(path, bad+"/") {
					t.Errorf("%s imports %s: a rule has no Kubernetes client", p.PkgPath, path)
				}
			}
		}
		usesEnv := false
		for id, obj := range p.TypesInfo.Uses {
			if obj.Pkg() == nil || obj.Pkg().Path() != "isobar.dev/controller/pkg/env" {
				continue
			}
			usesEnv = true
			if isIndex(obj) {
				t.Errorf("%s: %s uses env.%s, whose reads are not recorded; take an env.Env", p.Fset.Position(id.Pos()), p.PkgPath, obj.Name())
			}
		}
		if !usesEnv {
			t.Errorf("%s uses nothing of package env: the test no longer looks where the package reads", p.PkgPath)
		}
	}
}

// The engine applies what the processors decide: it reads no snapshot (it
// imports package env for the types of recorded reads alone) and knows no
// processor nor any API's route rules (it keeps backend's cluster specs,
// and rules only as an opaque value), so that the rules of a routing API
// live in its processor.
func TestEngineKnowsNoProcessor(t *testing.T) {
	if testing.Short() {
		t.Skip("loads the packages with go list")
	}
	cfg := &packages.Config{Mode: packages.NeedName | packages.NeedImports | packages.NeedDeps, Dir: "."}
	pkgs, err := packages.Load(cfg, "isobar.dev/controller/pkg/engine")
	if err != nil {
		t.Fatal(err)
	}
	if packages.PrintErrors(pkgs) > 0 || len(pkgs) != 1 {
		t.Fatal("the engine did not load")
	}
	processors := []string{"isobar.dev/controller/pkg/gatewayapi", "isobar.dev/controller/pkg/ingress", "isobar.dev/controller/pkg/httpproxy", "isobar.dev/controller/pkg/routerule"}
	for path := range pkgs[0].Imports {
		if path == "isobar.dev/controller/pkg/resources" {
			t.Errorf("the engine imports %s", path)
		}
	}
	for _, path := range importPaths(pkgs[0]) {
		if slices.Contains(processors, path) {
			t.Errorf("the engine imports %s", path)
		}
		for _, bad := range forbiddenTransitives {
			if path == bad || strings.HasPrefix(path, bad+"/") {
				t.Errorf("the engine imports %s: it has no Kubernetes client", path)
			}
		}
	}
}

// importPaths returns every package p imports, directly or not.
func importPaths(p *packages.Package) []string {
	seen := map[string]bool{}
	var walk func(*packages.Package)
	walk = func(p *packages.Package) {
		for path, dep := range p.Imports {
			if !seen[path] {
				seen[path] = true
				walk(dep)
			}
		}
	}
	walk(p)
	out := make([]string, 0, len(seen))
	for path := range seen {
		out = append(out, path)
	}
	return out
}

// isIndex reports whether obj is the Index type, its constructor or one
// of its methods.
func isIndex(obj types.Object) bool {
	if obj.Name() == "Index" || obj.Name() == "NewIndex" {
		return true
	}
	f, ok := obj.(*types.Func)
	if !ok {
		return false
	}
	recv := f.Signature().Recv()
	if recv == nil {
		return false
	}
	rt := recv.Type()
	if p, ok := rt.(*types.Pointer); ok {
		rt = p.Elem()
	}
	n, ok := rt.(*types.Named)
	return ok && n.Obj().Name() == "Index"
}

// The Gateway API's translator knows no other routing API: the
// processors of HTTPProxy and Ingress are its peers, which the
// orchestrator (package translate) passes in, so that an API's selection,
// attachment and status live in its processor alone. The test fails when
// package gatewayapi imports another API's package, directly or not, or
// when its code names HTTPProxy or Ingress.
func TestGatewayAPIKnowsNoOtherAPI(t *testing.T) {
	if testing.Short() {
		t.Skip("loads the packages with go list")
	}
	cfg := &packages.Config{Mode: packages.NeedName | packages.NeedImports | packages.NeedDeps | packages.NeedFiles, Dir: "."}
	pkgs, err := packages.Load(cfg, "isobar.dev/controller/pkg/gatewayapi")
	if err != nil {
		t.Fatal(err)
	}
	if packages.PrintErrors(pkgs) > 0 || len(pkgs) != 1 {
		t.Fatal("package gatewayapi did not load")
	}
	others := []string{"isobar.dev/controller/pkg/ingress", "isobar.dev/controller/pkg/httpproxy", "isobar.dev/controller/pkg/translate"}
	for _, path := range importPaths(pkgs[0]) {
		for _, other := range others {
			if path == other || strings.HasPrefix(path, other+"/") {
				t.Errorf("package gatewayapi imports %s", path)
			}
		}
	}
	if len(pkgs[0].GoFiles) == 0 {
		t.Fatal("package gatewayapi has no files: the test no longer looks where the code is")
	}
	for _, f := range pkgs[0].GoFiles {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(b), "\n") {
			if strings.Contains(line, "HTTPProxy") || strings.Contains(line, "Ingress") {
				t.Errorf("%s:%d names another routing API: %s", f, i+1, strings.TrimSpace(line))
			}
		}
	}
}
