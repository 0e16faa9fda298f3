package study

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/spoc-project/spoc/search"
	"github.com/spoc-project/spoc/search/random"
)

// dupSpace has 4×3 = 12 raw points but only 5 canonical ones: a limit at
// or above the size it limits is "off" (0), as vLLM's
// long-prefill-token-threshold is at or above the batch budget.
func dupSpace() search.Space {
	s := search.Space{Params: []search.Param{
		search.Categorical("size", 1, 2, 4, 8),
		search.Categorical("limit", 0, 4, 8),
	}}
	s.Canonical = func(p search.Params) search.Params {
		if p.Int("limit") >= p.Int("size") {
			q := p.Clone()
			q["limit"] = 0
			return q
		}
		return p
	}
	return s
}

// A sampled configuration canonically equal to an evaluated one is not
// evaluated again: the trial carries the earlier result and says which
// trial it copies.
func TestCanonicalDuplicatesReuseResults(t *testing.T) {
	db, _ := openSQLite(t)
	ctx := context.Background()
	space := dupSpace()
	st, err := db.CreateOrLoad(ctx, Config{Name: "dup", Directions: twoMin, Space: space, Sampler: "random", Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	var calls atomic.Int32
	opt := fastOptions(st, 20)
	opt.Space = space
	opt.Sampler = random.New(3)
	opt.Objective = func(_ context.Context, tc *search.TrialContext) ([]float64, []float64, error) {
		calls.Add(1)
		c := space.Canonical(tc.Params)
		return []float64{float64(c.Int("size")), float64(c.Int("limit"))}, nil, nil
	}
	res, err := Optimize(ctx, opt)
	if err != nil {
		t.Fatal(err)
	}
	trials, err := st.Trials(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(trials) != 20 {
		t.Fatalf("%d trials, want the budget of 20", len(trials))
	}
	evaluated := map[string]int{}
	reused := 0
	for _, tr := range trials {
		k := space.CanonicalKey(tr.Params)
		src, dup := tr.SystemAttrs[AttrDuplicateOf]
		if !dup {
			if prev, seen := evaluated[k]; seen {
				t.Errorf("trials %d and %d are canonical duplicates and both were evaluated: %v", prev, tr.Number, tr.Params)
			}
			evaluated[k] = tr.Number
			continue
		}
		reused++
		n := int(src.(float64))
		if n != evaluated[k] {
			t.Errorf("trial %d: duplicate_of %d, want %d (the evaluated trial with its canonical parameters)", tr.Number, n, evaluated[k])
		}
		orig := trials[n]
		if tr.State != orig.State || len(tr.Values) != 2 || tr.Values[0] != orig.Values[0] || tr.Values[1] != orig.Values[1] {
			t.Errorf("trial %d does not carry trial %d's result: %v %v vs %v %v", tr.Number, n, tr.State, tr.Values, orig.State, orig.Values)
		}
	}
	if len(evaluated) != 5 || int(calls.Load()) != 5 {
		t.Errorf("%d distinct configurations, %d objective calls; want the 5 canonical points evaluated once each", len(evaluated), calls.Load())
	}
	if reused != 15 || res.Reused != 15 || res.Ran != 5 {
		t.Errorf("reused %d (result says %d), ran %d; want 15 reused and 5 run", reused, res.Reused, res.Ran)
	}
}

// The first trials are queued once, however many workers start the study,
// and canonically equal seeds are queued once.
func TestEnqueueFirstOnlyIntoAnEmptyStudy(t *testing.T) {
	db, _ := openSQLite(t)
	ctx := context.Background()
	space := dupSpace()
	st, err := db.CreateOrLoad(ctx, Config{Name: "seeded", Directions: twoMin, Space: space, Sampler: "random", Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	st.Space = space
	seeds := []search.Params{{"size": 8, "limit": 4}, {"size": 4, "limit": 8}, {"size": 4, "limit": 0}}
	got, err := st.EnqueueFirst(ctx, seeds)
	if err != nil || len(got) != 2 || got[0] != 0 || got[1] != 1 {
		t.Fatalf("first call queued %v (%v), want trials 0 and 1 (the third seed equals the second)", got, err)
	}
	if again, err := st.EnqueueFirst(ctx, seeds); err != nil || again != nil {
		t.Fatalf("second call queued %v (%v), want nothing", again, err)
	}
	if _, err := st.EnqueueFirst(ctx, []search.Params{{"size": 3, "limit": 0}}); err == nil {
		t.Fatal("a seed outside the space was accepted")
	}
	trials, _ := st.Trials(ctx)
	if len(trials) != 2 || trials[0].Params.Int("size") != 8 || trials[0].State != search.StateWaiting {
		t.Fatalf("trials %+v", trials)
	}
}
