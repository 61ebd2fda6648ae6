package repo

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
)

// cosmostestModelFiles hold the embedded account's state: databases,
// containers, items, the change log, sessions, partition key ranges and the
// lease formats. They are the bottom layer of pkg/cosmostest.
var cosmostestModelFiles = []string{"account.go", "changelog.go", "epk.go", "items.go", "leaseformat.go", "session.go", "topology.go"}

// The model of pkg/cosmostest knows nothing of HTTP or of the layers above
// it: its files import no net/http and name nothing that the package's
// other files (the handler's gate, faults, auth, request log, routing and
// replies; the Server) declare. Arrows run one way: Server → Handler →
// Account.
func TestCosmostestModelDependsOnNothingAbove(t *testing.T) {
	dir := filepath.Join(root, "pkg/cosmostest")
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, dir, nil, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	pkg, ok := pkgs["cosmostest"]
	if !ok {
		t.Fatal("no package cosmostest in pkg/cosmostest")
	}
	above := map[string]string{} // a top-level name declared above the model, and its file
	models := map[string]*ast.File{}
	for path, f := range pkg.Files {
		name := filepath.Base(path)
		if slices.Contains(cosmostestModelFiles, name) {
			models[name] = f
			continue
		}
		for _, decl := range f.Decls {
			switch d := decl.(type) {
			case *ast.FuncDecl:
				if d.Recv == nil {
					above[d.Name.Name] = name
				}
			case *ast.GenDecl:
				for _, spec := range d.Specs {
					switch s := spec.(type) {
					case *ast.TypeSpec:
						above[s.Name.Name] = name
					case *ast.ValueSpec:
						for _, n := range s.Names {
							above[n.Name] = name
						}
					}
				}
			}
		}
	}
	if len(models) != len(cosmostestModelFiles) {
		t.Fatalf("model files found: %d of %v", len(models), cosmostestModelFiles)
	}
	for name, f := range models {
		for _, imp := range f.Imports {
			if path, _ := strconv.Unquote(imp.Path.Value); path == "net/http" {
				t.Errorf("%s imports net/http: the model must not know HTTP", name)
			}
		}
		var visit func(n ast.Node) bool
		visit = func(n ast.Node) bool {
			switch x := n.(type) {
			case *ast.SelectorExpr: // pkg.Name or value.field: only the left side can name the package's own
				ast.Inspect(x.X, visit)
				return false
			case *ast.Ident:
				if file, ok := above[x.Name]; ok {
					t.Errorf("%s:%d names %s, declared in %s above the model", name, fset.Position(x.Pos()).Line, x.Name, file)
				}
			}
			return true
		}
		ast.Inspect(f, visit)
	}
}
