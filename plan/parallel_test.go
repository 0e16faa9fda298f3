package plan_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/spoc-project/spoc/config"
	"github.com/spoc-project/spoc/plan"
	"github.com/spoc-project/spoc/study"
)

// TestQuickPlanParallelSearch: search.parallel reaches the plan's search
// phase (tune.Run through capacity.Evaluator.Study): the quick plan's
// study holds its whole budget, evaluated by several workers at once.
func TestQuickPlanParallelSearch(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a whole quick plan (seconds)")
	}
	t.Parallel() // seconds of CPU in a plan of its own: overlaps the others
	dir := t.TempDir()
	cfg := config.Default()
	cfg.Search.Parallel = 3
	setup := quickSetup(t, cfg, dir)
	if setup.Search.Parallel != 3 {
		t.Fatalf("setup search parallel = %d", setup.Search.Parallel)
	}
	var progress bytes.Buffer
	s, err := plan.Run(context.Background(), setup, plan.Options{Progress: &progress})
	if err != nil {
		t.Fatalf("plan: %v\n%s", err, progress.String())
	}
	if !strings.Contains(progress.String(), "up to 3 at once (search.parallel)") {
		t.Errorf("the search phase's header does not say 3 trials run at once:\n%s", progress.String())
	}
	if s.Search == nil || s.Search.Parallel != 3 {
		t.Errorf("summary's search section: %+v, want parallel 3", s.Search)
	}
	ctx := context.Background()
	db, err := study.Open(ctx, setup.Search.Storage)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	sums, err := db.Studies(ctx)
	if err != nil || len(sums) != 1 {
		t.Fatalf("studies %+v: %v", sums, err)
	}
	st, err := db.Load(ctx, sums[0].Name)
	if err != nil {
		t.Fatal(err)
	}
	trials, err := st.Trials(ctx)
	if err != nil {
		t.Fatal(err)
	}
	workers := map[any]bool{}
	for _, tr := range trials {
		workers[tr.SystemAttrs["worker"]] = true
	}
	if len(trials) != setup.Search.Trials || s.Trials != len(trials) || len(workers) < 2 {
		t.Errorf("the plan's study: %d trials (summary %d) by workers %v; want the budget of %d, by several workers", len(trials), s.Trials, workers, setup.Search.Trials)
	}
}
