package tpe

import (
	"context"
	"fmt"
	"reflect"
	"sort"
	"testing"

	"github.com/spoc-project/spoc/search"
	"github.com/spoc-project/spoc/search/problems"
	"github.com/spoc-project/spoc/search/random"
)

func mustNew(t testing.TB, opt Options) *Sampler {
	t.Helper()
	s, err := New(opt)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestOptionsValidated(t *testing.T) {
	for _, o := range []Options{
		{},
		{Directions: []search.Direction{search.Minimize}, Gamma: 1.5},
		{Directions: []search.Direction{search.Minimize}, StartupTrials: -1},
		{Directions: []search.Direction{search.Minimize}, PriorWeight: -1},
	} {
		if _, err := New(o); err == nil {
			t.Errorf("New(%+v) accepted", o)
		}
	}
}

// Same seed and history ⇒ same proposals, the whole run long.
func TestDeterministicPerSeed(t *testing.T) {
	prob := problems.Mixed()
	run := func(seed uint64) []search.Params {
		res, err := problems.Run(context.Background(), prob, mustNew(t, Options{Directions: prob.Directions, Seed: seed}), 40)
		if err != nil {
			t.Fatal(err)
		}
		var out []search.Params
		for _, tr := range res.Trials {
			out = append(out, tr.Params)
		}
		return out
	}
	a, b, c := run(7), run(7), run(8)
	if !reflect.DeepEqual(a, b) {
		t.Fatal("two runs with seed 7 differ")
	}
	if reflect.DeepEqual(a, c) {
		t.Fatal("seeds 7 and 8 gave the same run")
	}
}

// The start is a Latin hypercube: with as many startup trials as a
// categorical has choices times k, each choice appears k times, and every
// stratum of a numeric parameter holds one point.
func TestStartupIsALatinHypercube(t *testing.T) {
	space := search.Space{Params: []search.Param{search.Float("x", 0, 1), search.Categorical("c", "a", "b")}}
	s := mustNew(t, Options{Directions: []search.Direction{search.Minimize}, Seed: 3, StartupTrials: 10})
	var hist []search.Trial
	var xs []float64
	counts := map[any]int{}
	for i := range 10 {
		p, err := s.Sample(context.Background(), hist, space)
		if err != nil {
			t.Fatal(err)
		}
		xs = append(xs, p.Float("x"))
		counts[p["c"]]++
		hist = append(hist, search.Trial{Number: i, Params: p, State: search.StateComplete, Values: []float64{p.Float("x")}})
	}
	sort.Float64s(xs)
	for i, x := range xs {
		if x < float64(i)/10 || x >= float64(i+1)/10 {
			t.Errorf("stratum %d holds %v", i, x)
		}
	}
	if counts["a"] != 5 || counts["b"] != 5 {
		t.Errorf("choices %v, want 5 and 5", counts)
	}
}

// After the start the model concentrates trials where the objective is
// good: on a 1-D bowl the last 20 proposals are mostly near the optimum,
// while a uniform draw puts 20 % of them there.
func TestModelConcentratesOnGoodRegion(t *testing.T) {
	space := search.Space{Params: []search.Param{search.Float("x", 0, 1), search.Categorical("c", "bad", "good", "worse")}}
	dirs := []search.Direction{search.Minimize}
	s := mustNew(t, Options{Directions: dirs, Seed: 1})
	var hist []search.Trial
	near, good := 0, 0
	for i := range 40 {
		p, err := s.Sample(context.Background(), hist, space)
		if err != nil {
			t.Fatal(err)
		}
		x := p.Float("x")
		v := (x - 0.3) * (x - 0.3)
		if p["c"] != "good" {
			v += 0.5
		}
		if i >= 20 {
			if x > 0.2 && x < 0.4 {
				near++
			}
			if p["c"] == "good" {
				good++
			}
		}
		hist = append(hist, search.Trial{Number: i, Params: p, State: search.StateComplete, Values: []float64{v}})
	}
	if near < 12 || good < 14 {
		t.Errorf("of the last 20 proposals %d are within 0.1 of the optimum and %d use the good choice", near, good)
	}
}

// Constraints decide the split: a feasible trial is good before any
// violating one, however good the violator's values.
func TestFeasibleTrialsAreGoodFirst(t *testing.T) {
	space := search.Space{Params: []search.Param{search.Float("x", 0, 1)}}
	s := mustNew(t, Options{Directions: []search.Direction{search.Minimize}, Gamma: 0.2})
	var hist []search.Trial
	for i := range 10 {
		x := float64(i) / 10
		c := []float64{-1}
		if x < 0.5 {
			c = []float64{x + 0.1} // the best values violate the SLA
		}
		hist = append(hist, search.Trial{Number: i, Params: search.Params{"x": x}, State: search.StateComplete, Values: []float64{x}, Constraints: c})
	}
	hist = append(hist, search.Trial{Number: 10, Params: search.Params{"x": 0.95}, State: search.StateInfeasible})
	good, bad := s.split(s.observations(hist, space))
	if len(good) != 2 || good[0][0] != 0.5 || good[1][0] != 0.6 || len(bad) != 9 {
		t.Errorf("good %v, bad %d; want the two best feasible (0.5, 0.6)", good, len(bad))
	}
}

// Proposals respect the space's rules and never repeat an evaluated
// configuration canonically.
func TestProposalsRespectRulesAndCanonicalDuplicates(t *testing.T) {
	space := search.Space{Params: []search.Param{search.Categorical("size", 1, 2, 4, 8), search.Categorical("limit", 0, 4, 8), search.Float("x", 0, 1)}}
	space = space.WithRule("x below 0.9", func(p search.Params) error {
		if p.Float("x") > 0.9 {
			return fmt.Errorf("x %v > 0.9", p.Float("x"))
		}
		return nil
	})
	space.Canonical = func(p search.Params) search.Params {
		q := p.Clone()
		if p.Int("limit") >= p.Int("size") {
			q["limit"] = 0
		}
		q["x"] = float64(int(p.Float("x") * 4)) // quarters behave alike
		return q
	}
	s := mustNew(t, Options{Directions: []search.Direction{search.Minimize}, Seed: 2, StartupTrials: 4})
	var hist []search.Trial
	seen := map[string]bool{}
	for i := range 16 {
		p, _, err := search.SampleDistinct(context.Background(), s, hist, space, 0)
		if err != nil {
			t.Fatal(err)
		}
		k := space.CanonicalKey(p)
		if seen[k] {
			t.Fatalf("trial %d repeats %s", i, k)
		}
		seen[k] = true
		hist = append(hist, search.Trial{Number: i, Params: p, State: search.StateComplete, Values: []float64{p.Float("x")}})
	}
}

// On the mixed-parameter problem (an engine-flag search in miniature) TPE
// beats random search at 30 and 60 trials in the median over 9 seeds.
func TestBeatsRandomOnMixed(t *testing.T) {
	if testing.Short() {
		t.Skip("18 short runs per sampler")
	}
	prob := problems.Mixed()
	for _, n := range []int{30, 60} {
		var tpeHV, randHV []float64
		for seed := uint64(1); seed <= 9; seed++ {
			a, err := problems.Run(context.Background(), prob, mustNew(t, Options{Directions: prob.Directions, Seed: seed}), n)
			if err != nil {
				t.Fatal(err)
			}
			b, err := problems.Run(context.Background(), prob, random.New(seed), n)
			if err != nil {
				t.Fatal(err)
			}
			tpeHV, randHV = append(tpeHV, a.RelativeHypervolume), append(randHV, b.RelativeHypervolume)
		}
		mt, mr := median(tpeHV), median(randHV)
		t.Logf("%d trials: median relative HV tpe %.3f, random %.3f", n, mt, mr)
		if mt <= mr {
			t.Errorf("%d trials: TPE median %.3f ≤ random %.3f", n, mt, mr)
		}
	}
}

func median(v []float64) float64 {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	return s[len(s)/2]
}

// BenchmarkSample200 is the sampling overhead per trial of a 200-trial
// study on the reference space's shape (7 parameters: 2 log ints, a
// stepped float, 4 categoricals) with 3 objectives and a constraint.
func BenchmarkSample200(b *testing.B) {
	space := search.Space{Params: []search.Param{
		search.IntLog("max-num-batched-tokens", 256, 16384),
		search.IntLog("max-num-seqs", 16, 1024),
		search.FloatStep("gpu-memory-utilization", 0.80, 0.95, 0.01),
		search.Bool("enable-prefix-caching"),
		search.Categorical("long-prefill-token-threshold", 0, 2048, 8192),
		search.Categorical("block-size", 16, 32, 64),
		search.Bool("async-scheduling"),
	}}
	dirs := []search.Direction{search.Maximize, search.Minimize, search.Minimize}
	s := mustNew(b, Options{Directions: dirs, Seed: 1})
	r := random.New(9)
	var hist []search.Trial
	for i := range 200 {
		p, err := r.Sample(context.Background(), hist, space)
		if err != nil {
			b.Fatal(err)
		}
		bt, ns := float64(p.Int("max-num-batched-tokens")), float64(p.Int("max-num-seqs"))
		hist = append(hist, search.Trial{Number: i, Params: p, State: search.StateComplete,
			Values: []float64{bt / 100, 1e4 / bt, ns / 10}, Constraints: []float64{0.5 - bt/16384}})
	}
	b.ResetTimer()
	for b.Loop() {
		if _, err := s.Sample(context.Background(), hist, space); err != nil {
			b.Fatal(err)
		}
	}
}
