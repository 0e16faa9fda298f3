package archtest

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// The rules below read the code as Go (go/parser, go/ast), never as text:
// a comment or a string that mentions a call is not a call. Each takes the
// parsed non-test files of a tree and returns what breaks it; the tests in
// arch_test.go run them on the module, fixtures_test.go on the small
// packages under testdata that each rule must reject.

// cliPackage is the folder of the CLI edge, relative to the module root.
const cliPackage = "cmd/spoc/internal/cli"

// The CLI edge turns flags into a Setup, calls one library function and
// renders: files and functions beyond these sizes hold use-case logic that
// belongs in a library package (issue 29).
const (
	cliMaxFileLines = 300
	cliMaxFuncLines = 60
)

// newDeploymentCallers are the packages that may call sim.NewDeployment,
// which rereads model, GPU, calibration and correction files: sim itself,
// and config, where the Setup is resolved once (config/launcher.go builds
// the simulator's launcher from it). Everything else uses the resolved
// deployment the Setup carries.
var newDeploymentCallers = map[string]bool{
	"sim":       true,
	"sim/serve": true, // spoc sim serve's vllm serve command line is a deployment of its own
	"config":    true,
}

// samplerRegistry is the package that maps sampler names to constructors;
// samplerAlgorithms are the algorithm packages whose New it alone calls.
const samplerRegistry = "search/samplers"

var samplerAlgorithms = []string{"search/tpe", "search/nsga2", "search/random", "search/grid"}

// routeOwners may spell vLLM's OpenAI routes (/v1/...) as literals: vllm,
// which defines them, and the two test servers, which serve them. Test
// files and testdata may too (the walk skips them).
var routeOwners = map[string]bool{
	"vllm":               true,
	"sim/serve":          true,
	"loadgen/testserver": true,
}

// scheduleUsers are the two executors, which must both run their users on
// workload.NewSchedule.
var scheduleUsers = []string{"loadgen", "sim"}

// testHarness is the folder of the packages only tests import.
const testHarness = "internal/testharness"

// goFile is one parsed non-test Go file of a tree.
type goFile struct {
	dir  string // its folder relative to the tree's root, with slashes ("." at the root)
	path string // its path relative to the root, with slashes
	fset *token.FileSet
	ast  *ast.File
}

// violation is a rule broken at a position.
type violation struct {
	pos string // path:line
	msg string
}

func (v violation) String() string { return v.pos + ": " + v.msg }

// parseTree parses the non-test Go files under root, leaving out testdata,
// hidden folders and nested modules (a folder with its own go.mod, such as
// tools/kube).
func parseTree(t testing.TB, root string) []goFile {
	t.Helper()
	fset := token.NewFileSet()
	var files []goFile
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path == root {
				return nil
			}
			if d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".") {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		files = append(files, goFile{dir: pathDir(rel), path: rel, fset: fset, ast: f})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatalf("no Go files under %s", root)
	}
	return files
}

func pathDir(rel string) string {
	if i := strings.LastIndex(rel, "/"); i >= 0 {
		return rel[:i]
	}
	return "."
}

func (f goFile) at(p token.Pos) string {
	return fmt.Sprintf("%s:%d", f.path, f.fset.Position(p).Line)
}

func (f goFile) lines(n ast.Node) int {
	return f.fset.Position(n.End()).Line - f.fset.Position(n.Pos()).Line + 1
}

// importName is the name file f refers to the module's package pkg by
// ("" when f does not import it, "." or "_" for those imports).
func (f goFile) importName(pkg string) string {
	for _, imp := range f.ast.Imports {
		p, err := strconv.Unquote(imp.Path.Value)
		if err != nil || p != module+pkg {
			continue
		}
		if imp.Name != nil {
			return imp.Name.Name
		}
		return pkg[strings.LastIndex(pkg, "/")+1:]
	}
	return ""
}

// refersTo reports whether e is pkgName.sel, an exported name of an
// imported package.
func refersTo(e ast.Expr, pkgName, sel string) bool {
	s, ok := e.(*ast.SelectorExpr)
	if !ok || s.Sel.Name != sel {
		return false
	}
	id, ok := s.X.(*ast.Ident)
	return ok && id.Name == pkgName
}

// checkCLISize: no non-test file of the CLI package (the folder cli, not
// its subfolders) over cliMaxFileLines lines, no function there over
// cliMaxFuncLines lines from its func keyword to its closing brace. A
// function is a declaration (with the literals inside it) or a function
// literal at package level (var f = func() {...}).
func checkCLISize(files []goFile, cli string) []violation {
	var out []violation
	for _, f := range files {
		if f.dir != cli {
			continue
		}
		if n := f.fset.File(f.ast.Pos()).LineCount(); n > cliMaxFileLines {
			out = append(out, violation{f.path + ":1", fmt.Sprintf("%d lines, over the CLI edge's %d: move the use case into a library package", n, cliMaxFileLines)})
		}
		for _, d := range f.ast.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if n := f.lines(d); n > cliMaxFuncLines {
					out = append(out, violation{f.at(d.Pos()), fmt.Sprintf("func %s is %d lines, over the CLI edge's %d", funcName(d), n, cliMaxFuncLines)})
				}
			case *ast.GenDecl:
				ast.Inspect(d, func(n ast.Node) bool {
					lit, ok := n.(*ast.FuncLit)
					if !ok {
						return true
					}
					if l := f.lines(lit); l > cliMaxFuncLines {
						out = append(out, violation{f.at(lit.Pos()), fmt.Sprintf("package-level func literal is %d lines, over the CLI edge's %d", l, cliMaxFuncLines)})
					}
					return false
				})
			}
		}
	}
	return out
}

func funcName(d *ast.FuncDecl) string {
	if d.Recv == nil || len(d.Recv.List) == 0 {
		return d.Name.Name
	}
	var b strings.Builder
	recv := d.Recv.List[0].Type
	if s, ok := recv.(*ast.StarExpr); ok {
		b.WriteString("*")
		recv = s.X
	}
	switch r := recv.(type) {
	case *ast.Ident:
		b.WriteString(r.Name)
	case *ast.IndexExpr:
		if id, ok := r.X.(*ast.Ident); ok {
			b.WriteString(id.Name)
		}
	case *ast.IndexListExpr:
		if id, ok := r.X.(*ast.Ident); ok {
			b.WriteString(id.Name)
		}
	}
	return "(" + b.String() + ")." + d.Name.Name
}

// checkNewDeployment: sim.NewDeployment is referred to (called, or taken as
// a value) only in the packages of allowed. Inside package sim it is a
// plain identifier, which is allowed.
func checkNewDeployment(files []goFile, allowed map[string]bool) []violation {
	var out []violation
	for _, f := range files {
		if allowed[f.dir] {
			continue
		}
		name := f.importName("sim")
		if name == "" || name == "_" {
			continue
		}
		ast.Inspect(f.ast, func(n ast.Node) bool {
			if e, ok := n.(ast.Expr); ok && refersTo(e, name, "NewDeployment") {
				out = append(out, violation{f.at(e.Pos()), "calls sim.NewDeployment, which resolves the deployment again mid-run; use the one the Setup carries (allowed in: " + joinKeys(allowed) + ")"})
			}
			return true
		})
	}
	return out
}

// checkOneSamplerRegistry: outside the registry (and the algorithm's own
// package), no non-test file refers to the New of an algorithm package (a
// sampler is built by name through samplers.New), and no switch statement
// has a case that is a string literal naming a registered sampler (names):
// the registry is the one table from a sampler's name to its constructor.
func checkOneSamplerRegistry(files []goFile, registry string, algorithms, names []string) []violation {
	isName := map[string]bool{}
	for _, n := range names {
		isName[n] = true
	}
	var out []violation
	for _, f := range files {
		if f.dir == registry {
			continue
		}
		for _, alg := range algorithms {
			if f.dir == alg {
				continue
			}
			name := f.importName(alg)
			if name == "" || name == "_" {
				continue
			}
			ast.Inspect(f.ast, func(n ast.Node) bool {
				if e, ok := n.(ast.Expr); ok && refersTo(e, name, "New") {
					out = append(out, violation{f.at(e.Pos()), fmt.Sprintf("builds a sampler with %s.New; build it by name with samplers.New (%s)", name, registry)})
				}
				return true
			})
		}
		ast.Inspect(f.ast, func(n ast.Node) bool {
			sw, ok := n.(*ast.SwitchStmt)
			if !ok {
				return true
			}
			for _, c := range sw.Body.List {
				for _, e := range c.(*ast.CaseClause).List {
					if s, ok := stringLit(e); ok && isName[s] {
						out = append(out, violation{f.at(e.Pos()), fmt.Sprintf("switches on the sampler name %q; the registry in %s maps names to samplers", s, registry)})
					}
				}
			}
			return true
		})
	}
	return out
}

// stringLit is the value of a string literal.
func stringLit(e ast.Expr) (string, bool) {
	lit, ok := e.(*ast.BasicLit)
	if !ok || lit.Kind != token.STRING {
		return "", false
	}
	s, err := strconv.Unquote(lit.Value)
	return s, err == nil
}

// checkRouteLiterals: outside owners, no string literal of a non-test file
// contains "/v1/" or is "/v1" (vllm.PathPrefix): vLLM's OpenAI routes are
// vllm's constants. Import paths (gonum.org/v1/...) and struct tags (the
// configuration's documentation) are not code that sends a request and
// are not checked; comments are not literals.
func checkRouteLiterals(files []goFile, owners map[string]bool) []violation {
	var out []violation
	for _, f := range files {
		if owners[f.dir] {
			continue
		}
		skip := map[*ast.BasicLit]bool{}
		for _, imp := range f.ast.Imports {
			skip[imp.Path] = true
		}
		ast.Inspect(f.ast, func(n ast.Node) bool {
			if fld, ok := n.(*ast.Field); ok && fld.Tag != nil {
				skip[fld.Tag] = true
			}
			lit, ok := n.(*ast.BasicLit)
			if !ok || skip[lit] {
				return true
			}
			if s, ok := stringLit(lit); ok && (strings.Contains(s, "/v1/") || s == "/v1") {
				out = append(out, violation{f.at(lit.Pos()), fmt.Sprintf("route literal %s; use vllm's Path constants", lit.Value)})
			}
			return true
		})
	}
	return out
}

// checkUsesSchedule: each package of pkgs calls workload.NewSchedule in a
// non-test file (a call expression, not a mention in a comment or a
// string).
func checkUsesSchedule(files []goFile, pkgs []string) []violation {
	var out []violation
	for _, pkg := range pkgs {
		calls, seen := false, false
		for _, f := range files {
			if f.dir != pkg {
				continue
			}
			seen = true
			name := f.importName("workload")
			if name == "" || name == "_" {
				continue
			}
			ast.Inspect(f.ast, func(n ast.Node) bool {
				if c, ok := n.(*ast.CallExpr); ok && refersTo(c.Fun, name, "NewSchedule") {
					calls = true
				}
				return !calls
			})
		}
		switch {
		case !seen:
			out = append(out, violation{pkg, "no Go files: is the executor still there?"})
		case !calls:
			out = append(out, violation{pkg, "does not run its users on workload.NewSchedule"})
		}
	}
	return out
}

// checkHarnessOnlyInTests: no non-test file outside the harness imports a
// package under it: what starts services for tests never ships in spoc.
func checkHarnessOnlyInTests(files []goFile, harness string) []violation {
	var out []violation
	for _, f := range files {
		if f.dir == harness || strings.HasPrefix(f.dir, harness+"/") {
			continue
		}
		for _, imp := range f.ast.Imports {
			p, err := strconv.Unquote(imp.Path.Value)
			if err == nil && (p == module+harness || strings.HasPrefix(p, module+harness+"/")) {
				out = append(out, violation{f.at(imp.Pos()), fmt.Sprintf("imports %s, which only tests may import", p)})
			}
		}
	}
	return out
}

func joinKeys(m map[string]bool) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return strings.Join(keys, ", ")
}

// report fails t with each violation of rule.
func report(t *testing.T, rule string, vs []violation) {
	t.Helper()
	for _, v := range vs {
		t.Errorf("%s: %s", rule, v)
	}
}
