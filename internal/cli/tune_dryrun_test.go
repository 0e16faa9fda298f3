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
