package study

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/spoc-project/spoc/internal/testharness/pgtest"
	"github.com/spoc-project/spoc/search"
	"github.com/spoc-project/spoc/search/nsga2"
)

// postgresURL is a PostgreSQL server for the test (internal/testharness/pgtest).
func postgresURL(t *testing.T) string {
	t.Helper()
	return pgtest.URL(t)
}

// TestPostgresFourWorkers: four workers, each with its own connection and
// its own NSGA-II sampler (as on four machines), share one study of 200
// trials after a dead worker left a RUNNING trial behind. The study must
// end with exactly 200 COMPLETE trials, the dead trial FAIL and re-run, no
// trial number duplicated, and consistent generations.
func TestPostgresFourWorkers(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a PostgreSQL server")
	}
	t0 := time.Now()
	url := postgresURL(t)
	t.Logf("postgres ready in %v", time.Since(t0))
	ctx := context.Background()
	cfg := testConfig("shared")
	cfg.Sampler = "nsga2"
	const pop, budget, workers = 10, 200, 4

	setup, err := Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer setup.Close()
	st, err := setup.CreateOrLoad(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	dead := &worker{opt: fastOptions(st, budget), id: "dead", log: discard()}
	dead.opt.Space = st.Space
	if c, err := dead.claimTrial(ctx); err != nil || c.trial == nil {
		t.Fatalf("dead worker claim: %v", err)
	}

	var wg sync.WaitGroup
	results := make([]Result, workers)
	errs := make([]error, workers)
	for i := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			db, err := Open(ctx, url)
			if err != nil {
				errs[i] = err
				return
			}
			defer db.Close()
			wst, err := db.CreateOrLoad(ctx, cfg)
			if err != nil {
				errs[i] = err
				return
			}
			sampler, err := nsga2.New(nsga2.Options{PopulationSize: pop, Directions: twoMin, Seed: cfg.Seed})
			if err != nil {
				errs[i] = err
				return
			}
			results[i], errs[i] = Optimize(ctx, Options{
				Study: wst, Sampler: sampler, Trials: budget, Worker: fmt.Sprintf("worker-%d", i),
				HeartbeatInterval: 100 * time.Millisecond, StaleAfter: 2 * time.Second, PollInterval: 50 * time.Millisecond,
				Objective: func(ctx context.Context, tc *search.TrialContext) ([]float64, []float64, error) {
					time.Sleep(2 * time.Millisecond)
					return objective(ctx, tc)
				},
			})
		}()
	}
	wg.Wait()
	t.Logf("%d trials by %d workers in %v", budget, workers, time.Since(t0))
	ran := 0
	for i, err := range errs {
		if err != nil {
			t.Fatalf("worker %d: %v", i, err)
		}
		ran += results[i].Complete
		t.Logf("worker %d: %+v", i, results[i])
	}
	if ran != budget {
		t.Fatalf("workers completed %d trials, want %d", ran, budget)
	}
	trials, err := st.Trials(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if trials[0].State != search.StateFail || trials[0].SystemAttrs["requeued_as"] == nil {
		t.Fatalf("dead worker's trial: %+v", trials[0])
	}
	checkExactlyComplete(t, trials[1:], budget, false)
	checkGenerations(t, trials[1:], pop)
	gens := map[int]int{}
	for _, tr := range trials[1:] {
		gens[tr.Generation]++
	}
	t.Logf("trials per generation: %v", gens)
}
