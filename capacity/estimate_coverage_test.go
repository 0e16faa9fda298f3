package capacity_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/spoc-project/spoc/capacity"
	"github.com/spoc-project/spoc/config"
	"github.com/spoc-project/spoc/internal/testharness/testtool"
)

// TestEstimateCoversTheLongWindowCapacity checks what the capacity's
// confidence interval claims against a longer measurement of the same
// quantity. The configuration is the one the default plan chose
// (report/testdata/plan.json, written by a real plan). Its "true"
// capacity is estimated once from runs with windows longer than the
// sweep's, on workload seeds no sweep uses, at user counts around the
// knee (5 counts × seeds); then independent sweeps with the default
// precision (±10 %), each with its own workload.seed, estimate it, and
// their 95 % intervals must cover the true value about 95 % of the time.
//
// The long lane runs 8 sweeps against a truth from 20 runs with 5×
// windows (about 2 min of CPU) and needs 6 covered; SPOC_PRECISION_FULL=1
// runs issue 31's measurement: 40 runs with 10× windows, 50 sweeps,
// coverage in [88 %, 100 %] (numbers in docs/capacity.md, "Checked").
func TestEstimateCoversTheLongWindowCapacity(t *testing.T) {
	testtool.Long(t, "a long-window truth and 8 sweeps of the reference case: about 2 min of CPU")
	full := os.Getenv("SPOC_PRECISION_FULL") != ""
	raw, err := os.ReadFile("../report/testdata/plan.json")
	if err != nil {
		t.Fatal(err)
	}
	var fixture struct {
		Capacity struct {
			Config map[string]any `json:"config"`
		} `json:"capacity"`
	}
	if err := json.Unmarshal(raw, &fixture); err != nil {
		t.Fatal(err)
	}
	checkCoverage(t, full, coverageTruth{}, fixture.Capacity.Config, func(seed uint64) *config.Config {
		c := config.Default()
		c.Workload.Seed = seed
		return c
	})
}

// TestEstimateCoversASteepKnee is the same check on engine A of the live
// acceptance (bench/precision/live.sh) run in virtual time: the foreign
// engine's H100 with max-num-seqs 64, so that past its throughput requests
// queue and TTFT p95 rises from well under to far over its limit within a
// few users, one profile with a constant think time and a 1 s ramp (users
// in step), 5 s + 12 s windows. Live, two plans there gave intervals that
// did not hold each other's estimate; this is where an interval is most
// tempted to be too narrow.
func TestEstimateCoversASteepKnee(t *testing.T) {
	testtool.Long(t, "a long-window truth and 8 sweeps of a steep knee: about 2 min of CPU")
	full := os.Getenv("SPOC_PRECISION_FULL") != ""
	base, err := config.LoadFile("../bench/fidelity/foreign.yaml")
	if err != nil {
		t.Fatal(err)
	}
	// its users start fresh (mid_session_start: false) and their contexts
	// grow over a session of about a minute, so the load is not
	// stationary over a window: a longer window sees longer contexts and a
	// lower capacity (20 runs of 5× windows put it at 91, the sweeps'
	// windows at 100). The capacity is defined for the sweep's windows, so
	// the truth is measured with them, on many seeds.
	checkCoverage(t, full, coverageTruth{scale: 1, seeds: 40}, base.Engine.Params, func(seed uint64) *config.Config {
		c, err := config.LoadFile("../bench/fidelity/foreign.yaml")
		if err != nil {
			t.Fatal(err)
		}
		c.Engine.Kind = "sim"
		c.Engine.GPU = "H100-SXM"
		c.Workload.Profiles[0].ThinkTime = config.Dist{Kind: "constant", Value: 0.5}
		c.Run.Ramp = config.Duration(time.Second)
		c.Workload.Seed = seed
		return c
	})
}

// coverageTruth sets how the truth is measured: windows scale× the sweep's
// measured window on seeds workload seeds per count (zero: 5× and 4 seeds,
// 10× and 8 with SPOC_PRECISION_FULL).
type coverageTruth struct{ scale, seeds int }

// checkCoverage measures the configuration with params once with long
// windows (the truth) and estimates it with independent default-precision
// sweeps: their intervals must cover the truth about 95 % of the time, meet
// the default precision on average, and (reported) hold each other's
// estimates as often as calibrated intervals do (about 83 % of pairs for
// two equally wide intervals).
func checkCoverage(t *testing.T, full bool, truthOf coverageTruth, params map[string]any, cfg func(seed uint64) *config.Config) {
	t.Helper()
	sweeps, truthSeeds, scale := 8, 4, 5
	if full {
		sweeps, truthSeeds, scale = 50, 8, 10
	}
	if truthOf.scale > 0 {
		truthSeeds, scale = truthOf.seeds, truthOf.scale
	}
	if n := os.Getenv("SPOC_PRECISION_SWEEPS"); n != "" {
		fmt.Sscan(n, &sweeps)
	}
	ctx := context.Background()
	setup := func(seed uint64) capacity.Setup {
		t.Helper()
		s, err := cfg(seed).Setup(config.SetupOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return s.Setup
	}
	// the sweeps, two at a time
	ests := make([]*capacity.CapacityEstimate, sweeps)
	runs := make([]int, sweeps)
	errs := make([]error, sweeps)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 2)
	for i := range sweeps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			res, err := capacity.SweepOne(ctx, setup(uint64(7000+101*i)), params, capacity.SweepRun{})
			if err == nil && res.Estimate == nil {
				err = fmt.Errorf("no estimate: %s", res.NoEstimate)
			}
			if err == nil {
				runs[i] = len(res.Runs)
				if os.Getenv("SPOC_PRECISION_RUNS") != "" {
					for _, k := range res.Runs {
						if len(k.Clauses) > 0 && k.Excluded == "" {
							t.Logf("sweep %d run u=%d seed=%d %v", i, k.Users, k.Seed, k.Clauses)
						}
					}
				}
			}
			ests[i], errs[i] = res.Estimate, err
		}()
	}
	wg.Wait()
	var centre float64
	for i, err := range errs {
		if err != nil {
			t.Fatalf("sweep %d: %v", i, err)
		}
		centre += ests[i].Users / float64(sweeps)
	}
	// the truth: runs with scale× measured windows at 5 counts around
	// the sweeps' mean estimate, each on a seed no sweep used
	s := setup(900000)
	var mu sync.Mutex
	var truthRuns []capacity.KneeRun
	jobs := make(chan capacity.Load)
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ev, err := capacity.NewEvaluator(s, nil)
			if err != nil {
				t.Error(err)
				return
			}
			defer ev.Close(ctx)
			for l := range jobs {
				r, err := ev.Evaluate(ctx, params, l, capacity.Outputs{})
				if err != nil {
					t.Error(err)
					continue
				}
				k := r.KneeRun(int(l.SeedOffset))
				mu.Lock()
				truthRuns = append(truthRuns, k)
				mu.Unlock()
			}
		}()
	}
	n := 0
	for _, f := range []float64{0.92, 0.96, 1, 1.04, 1.08} {
		for range truthSeeds {
			l := s.Windows.Sweep.At(int(math.Round(f * centre)))
			l.Duration *= timeScale(scale)
			l.SeedOffset = uint64(n)
			n++
			jobs <- l
		}
	}
	close(jobs)
	wg.Wait()
	truth, err := capacity.EstimateCapacity(truthRuns, 0.95)
	if err != nil {
		t.Fatalf("truth from %d long runs: %v", len(truthRuns), err)
	}
	covered := 0
	var precision, meanRuns float64
	for i, e := range ests {
		in := e.Lo <= truth.Users && truth.Users <= float64(e.Hi)
		if in {
			covered++
		}
		precision += float64(e.Precision) / float64(sweeps)
		meanRuns += float64(runs[i]) / float64(sweeps)
		t.Logf("sweep %2d: %.1f [%.1f, %.1f] ±%.1f %% from %d runs at %d counts (dispersion %.2f), covers %v", i, e.Users, e.Lo, float64(e.Hi), 100*float64(e.Precision), e.Runs, e.Levels, e.Dispersion, in)
	}
	pairs, mutual := 0, 0
	for i := range ests {
		for j := i + 1; j < len(ests); j++ {
			a, b := ests[i], ests[j]
			pairs++
			if a.Lo <= b.Users && b.Users <= float64(a.Hi) && b.Lo <= a.Users && a.Users <= float64(b.Hi) {
				mutual++
			}
		}
	}
	t.Logf("truth %.1f [%.1f, %.1f] (%s) from %d runs of %d× windows; %d/%d sweeps cover it (%.0f %%), mean estimate %.1f, mean precision ±%.1f %%, %.1f runs a sweep; %d/%d pairs hold each other's estimate (%.0f %%)",
		truth.Users, truth.Lo, float64(truth.Hi), truth.Binding, len(truthRuns), scale, covered, sweeps, 100*float64(covered)/float64(sweeps), centre, 100*precision, meanRuns, mutual, pairs, 100*float64(mutual)/float64(max(pairs, 1)))
	need := sweeps - 2
	if full {
		need = int(math.Ceil(0.88 * float64(sweeps)))
	}
	if covered < need {
		t.Errorf("%d of %d confidence intervals cover the long-window capacity %.1f; want at least %d", covered, sweeps, truth.Users, need)
	}
	if precision > 0.10 {
		t.Errorf("mean precision ±%.1f %%, want the default ±10 %% met", 100*precision)
	}
}

// timeScale is n as a duration multiplier.
func timeScale(n int) time.Duration { return time.Duration(n) }
