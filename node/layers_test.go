package node_test

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestPackageLayers checks the dependency rules ARCHITECTURE.md states, over the imports of every
// non-test Go file of the module (transitively, within the module):
//   - only raft/ imports hashicorp/raft;
//   - nothing under raft/ depends on gateway/;
//   - keyresolver depends on nothing under gateway/;
//   - no gateway imports federation/peering itself: the IRC edge reaches linked channels through
//     node/linkroute's Router.
func TestPackageLayers(t *testing.T) {
	root, module := moduleRoot(t)
	imports := moduleImports(t, root, module)

	deps := func(pkg string) []string { // the packages pkg depends on, itself excluded
		seen := map[string]bool{}
		var walk func(string)
		walk = func(p string) {
			for _, imp := range imports[p] {
				if !seen[imp] {
					seen[imp] = true
					walk(imp)
				}
			}
		}
		walk(pkg)
		out := make([]string, 0, len(seen))
		for p := range seen {
			out = append(out, p)
		}
		slices.Sort(out)
		return out
	}
	under := func(pkg, dir string) bool {
		rel := strings.TrimPrefix(pkg, module+"/")
		return rel == dir || strings.HasPrefix(rel, dir+"/")
	}

	for pkg, imps := range imports {
		for _, imp := range imps {
			if strings.HasPrefix(imp, "github.com/hashicorp/raft") && !under(pkg, "raft") {
				t.Errorf("%s imports %s: only raft/ may", pkg, imp)
			}
			if under(pkg, "gateway") && under(imp, "federation/peering") {
				t.Errorf("%s imports %s: a gateway reaches linked channels through node/linkroute", pkg, imp)
			}
		}
	}
	rules := []struct {
		name    string
		applies func(pkg string) bool
		banned  func(dep string) bool
	}{
		{"raft/ does not depend on gateway/",
			func(p string) bool { return under(p, "raft") },
			func(d string) bool { return under(d, "gateway") }},
		{"keyresolver does not depend on gateway/",
			func(p string) bool { return under(p, "keyresolver") },
			func(d string) bool { return under(d, "gateway") }},
	}
	for _, r := range rules {
		for pkg := range imports {
			if !r.applies(pkg) {
				continue
			}
			for _, d := range deps(pkg) {
				if r.banned(d) {
					t.Errorf("%s: %s depends on %s", r.name, pkg, d)
				}
			}
		}
	}
}

// moduleRoot finds the directory holding go.mod above this package, and the module's path.
func moduleRoot(t *testing.T) (dir, module string) {
	t.Helper()
	dir, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	for {
		b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil {
			for _, line := range strings.Split(string(b), "\n") {
				if m, ok := strings.CutPrefix(line, "module "); ok {
					return dir, strings.TrimSpace(m)
				}
			}
			t.Fatalf("no module line in %s/go.mod", dir)
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("go.mod not found")
		}
		dir = parent
	}
}

// moduleImports maps every package of the module to what its non-test files import: the
// module's own packages, and hashicorp/raft (the one outside import a rule is about).
func moduleImports(t *testing.T, root, module string) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "vendor") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, filepath.Dir(path))
		if err != nil {
			return err
		}
		pkg := module
		if rel != "." {
			pkg = module + "/" + filepath.ToSlash(rel)
		}
		if _, ok := out[pkg]; !ok {
			out[pkg] = nil
		}
		for _, spec := range f.Imports {
			imp, err := strconv.Unquote(spec.Path.Value)
			if err != nil {
				return err
			}
			if (strings.HasPrefix(imp, module+"/") || strings.HasPrefix(imp, "github.com/hashicorp/raft")) &&
				!slices.Contains(out[pkg], imp) {
				out[pkg] = append(out[pkg], imp)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("reading the module's imports: %v", err)
	}
	if len(out) < 20 {
		t.Fatalf("found only %d packages under %s", len(out), root)
	}
	return out
}
