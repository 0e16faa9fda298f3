package capacity_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/spoc-project/spoc/capacity"
	"github.com/spoc-project/spoc/config"
	"github.com/spoc-project/spoc/search"
	"github.com/spoc-project/spoc/tune"
)

// TestTuneParallelOnTheSimulator: spoc tune's use case with
// search.parallel 3 on the sim engine runs its trials side by side in
// virtual time on one evaluator (the workload, the simulator and the
// study shared by three goroutines: run with -race) and stores exactly
// the budget.
func TestTuneParallelOnTheSimulator(t *testing.T) {
	cfg := config.Default()
	cfg.Search.Trials = 6
	cfg.Search.Parallel = 3
	cfg.Search.Population = 2
	cfg.Search.Users = 8
	cfg.Search.Warmup = config.Duration(5 * time.Second)
	cfg.Search.Duration = config.Duration(20 * time.Second)
	cfg.Run.Ramp = 0
	cfg.Search.Storage = "sqlite:" + filepath.Join(t.TempDir(), "study.db")
	setup, err := cfg.Setup(config.SetupOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var reports []tune.Progress
	res, err := capacity.Tune(context.Background(), setup.Setup, capacity.TuneOptions{
		Progress: func(p tune.Progress) { reports = append(reports, p) },
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Trials) != 6 || len(reports) != 6 {
		t.Fatalf("%d trials stored, %d reported: %+v", len(res.Trials), len(reports), res.States)
	}
	workers := map[any]bool{}
	for _, tr := range res.Trials {
		if !tr.State.Finished() {
			t.Errorf("trial %d is %s", tr.Number, tr.State)
		}
		if tr.State == search.StateComplete && tr.UserAttrs[capacity.AttrProvenance] == nil {
			t.Errorf("trial %d has no provenance", tr.Number)
		}
		workers[tr.SystemAttrs["worker"]] = true
	}
	if len(workers) < 2 {
		t.Errorf("trials recorded by workers %v; want the three workers sharing them", workers)
	}
}
