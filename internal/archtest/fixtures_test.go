package archtest

import (
	"path/filepath"
	"reflect"
	"sort"
	"testing"

	"github.com/spoc-project/spoc/search/samplers"
)

// Each rule runs on a small tree under testdata that breaks it in the ways
// the rule names, beside code the rule must accept (the owner package, a
// test file, a comment or a string that only mentions the thing). The test
// wants exactly the violations listed: a rule that found nothing, or that
// flagged what it must accept, fails.
func TestRulesRejectTheirFixtures(t *testing.T) {
	for _, tc := range []struct {
		name  string
		check func([]goFile) []violation
		want  []string // positions of the violations, in any order
	}{
		{
			name:  "clisize",
			check: func(fs []goFile) []violation { return checkCLISize(fs, "internal/cli") },
			want: []string{
				"internal/cli/long.go:1",  // 301 lines
				"internal/cli/long.go:5",  // func tooLong, 61 lines
				"internal/cli/long.go:69", // a package-level func literal of 61 lines
				// ok.go's 60-line func, the long test file and report's long func pass
			},
		},
		{
			name:  "newdeployment",
			check: func(fs []goFile) []violation { return checkNewDeployment(fs, newDeploymentCallers) },
			want: []string{
				"capacity/evaluate.go:7", // simulator.NewDeployment taken as a value
				"plan/plan.go:7",         // sim.NewDeployment called
				// sim's own calls, config's, a test's, and report's comment, string and method pass
			},
		},
		{
			name: "samplers",
			check: func(fs []goFile) []violation {
				return checkOneSamplerRegistry(fs, samplerRegistry, samplerAlgorithms, samplers.Names())
			},
			want: []string{
				"tune/space.go:11", // case "tpe"
				"tune/space.go:12", // t.New (tpe under another name)
				"tune/space.go:13", // case "random" (not "other")
				"tune/space.go:14", // random.New
				// the registry's switch, tpe's own New and report's other names pass
			},
		},
		{
			name:  "routes",
			check: func(fs []goFile) []violation { return checkRouteLiterals(fs, routeOwners) },
			want: []string{
				"loadgen/runner.go:7", // "/v1"
				"loadgen/runner.go:7", // "/v1/chat/completions"
				// vllm, the two test servers, a test file, an import path, a struct tag, "apps/v1" and comments pass
			},
		},
		{
			name:  "harness",
			check: func(fs []goFile) []violation { return checkHarnessOnlyInTests(fs, testHarness) },
			want: []string{
				"engine/engine.go:5", // spoc's code imports testtool
				// the harness's own imports and a test file's pass
			},
		},
		{
			name:  "schedule",
			check: func(fs []goFile) []violation { return checkUsesSchedule(fs, scheduleUsers) },
			want: []string{
				"loadgen", // mentions workload.NewSchedule( in a comment and a string only
				// sim calls it under the import name wl
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			vs := tc.check(parseTree(t, filepath.Join("testdata", tc.name)))
			got := make([]string, len(vs))
			for i, v := range vs {
				got[i] = v.pos
				t.Log(v)
			}
			if len(got) == 0 {
				got = nil
			}
			sort.Strings(got)
			sort.Strings(tc.want)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("violations at %q, want %q", got, tc.want)
			}
		})
	}
}
