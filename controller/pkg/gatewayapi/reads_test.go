package gatewayapi

import (
	"go/ast"
	"go/types"
	"testing"

	"golang.org/x/tools/go/packages"
)

// Rules read what they do not translate (Services, Secrets, grants,
// namespaces) only through an env.Env, which records the read for the
// engine. The index behind an Env has no unrecorded accessor for them, so
// the one way around it is the snapshot's own lists: this test fails when
// the package's code selects one of them.
func TestRulesReadThroughEnv(t *testing.T) {
	if testing.Short() {
		t.Skip("loads the package with go list")
	}
	forbidden := map[string]bool{"Services": true, "EndpointSlices": true, "Secrets": true, "ConfigMaps": true, "Namespaces": true, "ReferenceGrants": true}
	cfg := &packages.Config{Mode: packages.NeedName | packages.NeedTypes | packages.NeedTypesInfo | packages.NeedSyntax, Dir: "."}
	pkgs, err := packages.Load(cfg, ".")
	if err != nil {
		t.Fatal(err)
	}
	if packages.PrintErrors(pkgs) > 0 {
		t.Fatal("the package did not load")
	}
	checked := 0
	for _, f := range pkgs[0].Syntax {
		ast.Inspect(f, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			s := pkgs[0].TypesInfo.Selections[sel]
			if s == nil || s.Kind() != types.FieldVal {
				return true
			}
			recv := s.Recv()
			if p, ok := recv.(*types.Pointer); ok {
				recv = p.Elem()
			}
			named, ok := recv.(*types.Named)
			if !ok || named.Obj().Pkg() == nil || named.Obj().Pkg().Path() != "isobar.dev/controller/pkg/resources" || named.Obj().Name() != "Resources" {
				return true
			}
			checked++
			if forbidden[sel.Sel.Name] {
				t.Errorf("%s: reads Resources.%s directly; read it through an env.Env so that the read is recorded", pkgs[0].Fset.Position(sel.Pos()), sel.Sel.Name)
			}
			return true
		})
	}
	if checked == 0 {
		t.Fatal("found no read of Resources at all: the test no longer looks where the package reads")
	}
}
