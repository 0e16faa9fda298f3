package cli

import (
	"strings"
	"testing"

	"github.com/spoc-project/spoc/tune"
)

// A dry run of a parallel study says how many trials run at once; one
// trial at a time says nothing more.
func TestDryRunSaysTrialsAtOnce(t *testing.T) {
	launches := []tune.Launch{{Trial: 0, Launch: "vllm serve m --max-num-seqs 256"}}
	for _, tc := range []struct {
		parallel int
		want     string
	}{
		{3, `study "s", sim engine: the first 1 trials (of 9, 3 at once (search.parallel)) would launch:`},
		{1, `study "s", sim engine: the first 1 trials (of 9) would launch:`},
	} {
		var b strings.Builder
		if err := writeDryRun(&b, tune.Spec{Study: "s", Trials: 9, Parallel: tc.parallel}, "sim", launches); err != nil {
			t.Fatal(err)
		}
		if first, _, _ := strings.Cut(b.String(), "\n"); first != tc.want {
			t.Errorf("parallel %d: %q, want %q", tc.parallel, first, tc.want)
		}
	}
}

// --trials below search.parallel runs every trial at once and says so,
// instead of refusing the file's search.parallel for a budget it never set.
func TestTrialsFlagBelowParallel(t *testing.T) {
	cfg := writeTuneConfig(t, strings.Replace(smallStudy, "  trials: 3\n", "  trials: 6\n  parallel: 3\n", 1))
	code, stdout, stderr := tuneCLI(t, "-c", cfg, "--dry-run", "--trials", "2")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	if !strings.Contains(stderr, "search.parallel 3 lowered to 2: --trials 2") {
		t.Errorf("stderr does not say parallel was lowered:\n%s", stderr)
	}
	if !strings.Contains(stdout, "(of 2, 2 at once (search.parallel))") {
		t.Errorf("the dry run does not run 2 at once:\n%s", stdout)
	}
}
