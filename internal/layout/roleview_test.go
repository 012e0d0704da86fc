package layout

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// roleSwitches lists the places in src (one Go file) that branch on the concrete type of a
// field named role: a type switch or a type assertion on x.role.
func roleSwitches(fset *token.FileSet, name string, src any) ([]string, error) {
	f, err := parser.ParseFile(fset, name, src, 0)
	if err != nil {
		return nil, err
	}
	var out []string
	isRole := func(e ast.Expr) bool {
		sel, ok := e.(*ast.SelectorExpr)
		return ok && sel.Sel.Name == "role"
	}
	ast.Inspect(f, func(n ast.Node) bool {
		if ta, ok := n.(*ast.TypeAssertExpr); ok && isRole(ta.X) {
			out = append(out, fset.Position(ta.Pos()).String())
		}
		return true
	})
	return out, nil
}

// The server's role is an interface whose methods decide (role.go): code that asks which
// concrete role it holds instead grows a branch in every such place each time a role is
// added. A type switch's guard is a type assertion with no type, so both forms are caught.
func TestNoRoleTypeSwitches(t *testing.T) {
	files, err := filepath.Glob("../../server/*.go")
	if err != nil || len(files) < 10 {
		t.Fatalf("server's files: %v (%d)", err, len(files))
	}
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		found, err := roleSwitches(fset, f, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, at := range found {
			t.Errorf("%s: branches on the role's concrete type; give the role a method instead", at)
		}
	}
}

func TestNoRoleTypeSwitchesCatches(t *testing.T) {
	src := `package server
func (s *Server) a() {
	switch r := s.role.(type) {
	case *leaderRole:
		_ = r
	}
	if _, ok := s.role.(*readOnlyRole); ok {
	}
	_ = s.other.(int)
}`
	found, err := roleSwitches(token.NewFileSet(), "x.go", src)
	if err != nil {
		t.Fatal(err)
	}
	if len(found) != 2 {
		t.Errorf("found %v, want the type switch and the assertion", found)
	}
}
