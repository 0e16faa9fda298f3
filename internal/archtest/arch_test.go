package archtest

import (
	"go/ast"
	"os/exec"
	"strings"
	"testing"

	"github.com/spoc-project/spoc/internal/testharness/testtool"
	"github.com/spoc-project/spoc/search/samplers"
)

const module = "github.com/spoc-project/spoc/"

// root is the module's root, from this package's folder.
const root = "../.."

// configImporters may import package config: config turns YAML into the
// domain types (workload.Spec, result.SLA, sim.DeploymentSpec, tune.Spec,
// capacity.Setup, plan.Setup) and cmd/spoc/internal/cli is the flags edge that loads
// it. External test packages (package x_test) may import it too: they
// resolve the reference configuration the way a user's is resolved. A
// package's own code and its internal tests may not.
var configImporters = map[string]bool{
	"config":   true,
	cliPackage: true,
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
	cmd.Dir = root
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
	for _, f := range parseTree(t, root) {
		for _, decl := range f.ast.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Recv != nil {
				continue
			}
			if owner, ok := owners[fn.Name.Name]; ok && f.dir != owner {
				t.Errorf("%s defines %s, which belongs to package %s", f.at(fn.Pos()), fn.Name.Name, owner)
			}
		}
	}
}

// Both executors follow the one schedule.
func TestExecutorsUseTheSchedule(t *testing.T) {
	report(t, "schedule", checkUsesSchedule(parseTree(t, root), scheduleUsers))
}

// The CLI edge stays thin (issue 29).
func TestCLIEdgeIsSmall(t *testing.T) {
	report(t, "CLI size", checkCLISize(parseTree(t, root), cliPackage))
}

// The Setup is resolved once: only sim and config build a simulated
// deployment from its spec.
func TestNewDeploymentOnlyWhereTheSetupIsResolved(t *testing.T) {
	report(t, "sim.NewDeployment", checkNewDeployment(parseTree(t, root), newDeploymentCallers))
}

// Samplers are chosen by name in one table.
func TestOneSamplerRegistry(t *testing.T) {
	report(t, "sampler registry", checkOneSamplerRegistry(parseTree(t, root), samplerRegistry, samplerAlgorithms, samplers.Names()))
}

// vLLM's routes are vllm's constants.
func TestRouteLiteralsOnlyInVLLM(t *testing.T) {
	report(t, "routes", checkRouteLiterals(parseTree(t, root), routeOwners))
}

// The test harness stays out of spoc's own code.
func TestHarnessOnlyInTests(t *testing.T) {
	report(t, "test harness", checkHarnessOnlyInTests(parseTree(t, root), testHarness))
}
