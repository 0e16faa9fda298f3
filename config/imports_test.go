package config

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/spoc-project/spoc/internal/testtool"
)

const module = "github.com/spoc-project/spoc/"

// configImporters may import package config: config turns YAML into the
// domain types (workload.Spec, result.SLA, sim.DeploymentSpec, tune.Spec,
// ...) and internal/cli is the flags edge that loads it. engine and capacity
// still read *config.Config; they are being rewritten to take domain values
// and leave this list in the next step.
var configImporters = map[string]bool{
	"config":       true,
	"internal/cli": true,
	"cmd/spoc":     true,
	"engine":       true, // to be removed: engine.Launcher takes engine.Params
	"capacity":     true, // to be removed: capacity takes a resolved Setup
	"plan":         true, // to be removed: plan.Run takes a resolved Setup
}

// configTestImporters may import config in their tests only.
var configTestImporters = map[string]bool{
	"report": true, // to be removed with capacity: fixture_test.go runs capacity.Plan(config.Default())
}

// Only config knows the YAML schema: every other package works on domain
// types, so a schema change cannot ripple through the code base.
func TestOnlyConfigAndTheEdgeImportConfig(t *testing.T) {
	goBin := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(goBin); err != nil {
		goBin = testtool.Find(t, "https://go.dev/doc/install", "go")
	}
	cmd := exec.Command(goBin, "list", "-f",
		`{{.ImportPath}}|{{join .Imports " "}}|{{join .TestImports " "}}|{{join .XTestImports " "}}`, "./...")
	cmd.Dir = ".."
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list ./...: %v\n%s", err, stderr.String())
	}
	seen := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
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
			if configImporters[pkg] || (i > 0 && configTestImporters[pkg]) {
				continue
			}
			t.Errorf("%s %s package config; only config's schema may know YAML: give %s a domain type and let config build it", pkg, kind, pkg)
		}
	}
	if seen < 20 {
		t.Fatalf("go list found only %d packages; is the test running inside the module?", seen)
	}
}
