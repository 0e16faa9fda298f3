package archtest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spoc-project/spoc/internal/testharness/testtool"
)

const module = "github.com/spoc-project/spoc/"

// configImporters may import package config: config turns YAML into the
// domain types (workload.Spec, result.SLA, sim.DeploymentSpec, tune.Spec,
// capacity.Setup, plan.Setup) and internal/cli is the flags edge that loads
// it. External test packages (package x_test) may import it too: they
// resolve the reference configuration the way a user's is resolved. A
// package's own code and its internal tests may not.
var configImporters = map[string]bool{
	"config":       true,
	"internal/cli": true,
}

// Only config knows the YAML schema: every other package works on domain
// types, so a schema change cannot ripple through the code base.
func TestOnlyConfigAndTheEdgeImportConfig(t *testing.T) {
	out := goList(t, "-f", `{{.ImportPath}}|{{join .Imports " "}}|{{join .TestImports " "}}|{{join .XTestImports " "}}`, "./...")
	seen := 0
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		fields := strings.Split(line, "|")
		if len(fields) != 4 {
			t.Fatalf("unexpected go list line %q", line)
		}
		pkg := strings.TrimPrefix(fields[0], module)
		seen++
		for i, kind := range []string{"imports", "tests import", "external tests import"} {
			if !strings.Contains(" "+fields[i+1]+" ", " "+module+"config ") {
				continue
			}
			if configImporters[pkg] || i == 2 {
				continue
			}
			t.Errorf("%s %s package config; only config's schema may know YAML: give %s a domain type and let config build it", pkg, kind, pkg)
		}
	}
	if seen < 20 {
		t.Fatalf("go list found only %d packages; is the test running inside the module?", seen)
	}
}

// goList runs go list in the module root with args.
func goList(t *testing.T, args ...string) string {
	t.Helper()
	goBin := testtool.Find(t, "https://go.dev/doc/install", "go")
	cmd := exec.Command(goBin, append([]string{"list"}, args...)...)
	cmd.Dir = "../.."
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list %v: %v\n%s", args, err, stderr.String())
	}
	return string(out)
}

// engine starts servers for flags; it knows nothing of studies or trials
// (a trial is an argument of the objective, not a context value).
func TestEngineDoesNotImportSearch(t *testing.T) {
	deps := strings.Fields(goList(t, "-deps", "./engine"))
	for _, banned := range []string{"search", "study", "tune", "capacity", "plan", "config"} {
		for _, d := range deps {
			if d == module+banned || strings.HasPrefix(d, module+banned+"/") {
				t.Errorf("engine depends on %s", d)
			}
		}
	}
	if len(deps) < 5 {
		t.Fatalf("go list -deps ./engine listed %d packages", len(deps))
	}
}

// Each rule lives in one package: vLLM's flag names and their
// normalisation in vllm, the closed-loop schedule in workload (used by both
// executors), the served-name rule in vllm.
func TestOneCopyOfEachRule(t *testing.T) {
	owners := map[string]string{
		"FlagName":    "vllm",
		"Flags":       "vllm",
		"Merge":       "vllm",
		"HasFlag":     "vllm",
		"ServedName":  "vllm",
		"NewSchedule": "workload",
		"CutNegation": "vllm",
	}
	root := "../.."
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) && path != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, filepath.Dir(path))
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Recv != nil {
				continue
			}
			if owner, ok := owners[fn.Name.Name]; ok && owner != "" && filepath.ToSlash(rel) != owner {
				t.Errorf("%s defines %s, which belongs to package %s", path, fn.Name.Name, owner)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// both executors follow the one schedule
	for _, pkg := range []string{"loadgen", "sim"} {
		out := goList(t, "-f", `{{join .GoFiles " "}}`, "./"+pkg)
		uses := false
		for _, name := range strings.Fields(out) {
			b, err := os.ReadFile(filepath.Join(root, pkg, name))
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(string(b), "workload.NewSchedule(") {
				uses = true
			}
		}
		if !uses {
			t.Errorf("package %s does not run its users on workload.NewSchedule", pkg)
		}
	}
}
