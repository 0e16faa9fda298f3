package capacity

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/spoc-project/spoc/result"
)

// synthetic passes exactly up to ceiling; throughput saturates at the knee.
func synthetic(ceiling int, calls *[]int) LevelFunc {
	return func(_ context.Context, users, _ int) (Repeat, error) {
		*calls = append(*calls, users)
		tp := 100 * math.Min(float64(users), 150)
		r := Repeat{Pass: users <= ceiling, OutputThroughput: tp}
		if !r.Pass {
			r.FailedClause = fmt.Sprintf("P2 ttft p95 > 2s at %d", users)
		}
		return r, nil
	}
}

func TestSweepFindsKnownCeilingExactly(t *testing.T) {
	for _, ceiling := range []int{1, 7, 24, 25, 26, 137, 300, 301, 999} {
		t.Run(fmt.Sprint(ceiling), func(t *testing.T) {
			var calls []int
			// resolution 1 user: bisection must land exactly on the ceiling
			res, err := Sweep(context.Background(), synthetic(ceiling, &calls), SweepOptions{Start: 25, Max: 4000, ResolutionUsers: 1})
			if err != nil {
				t.Fatal(err)
			}
			if res.Ceiling != ceiling || res.FirstFailing != ceiling+1 {
				t.Fatalf("ceiling %d, first failing %d; want %d, %d (calls %v)", res.Ceiling, res.FirstFailing, ceiling, ceiling+1, calls)
			}
			if res.FailedClause != fmt.Sprintf("P2 ttft p95 > 2s at %d", ceiling+1) {
				t.Errorf("failed clause %q", res.FailedClause)
			}
			seen := map[int]bool{}
			for _, c := range calls {
				if seen[c] {
					t.Errorf("count %d evaluated twice", c)
				}
				seen[c] = true
			}
		})
	}
}

func TestSweepDefaultResolution(t *testing.T) {
	var calls []int
	res, err := Sweep(context.Background(), synthetic(437, &calls), SweepOptions{Start: 25, Max: 4000, ResolutionUsers: 5, ResolutionFraction: 0.02})
	if err != nil {
		t.Fatal(err)
	}
	// resolution max(5, 2 % of ~437) = 9
	if res.Ceiling > 437 || 437-res.Ceiling > res.Resolution || res.FirstFailing <= 437 || res.FirstFailing-res.Ceiling > res.Resolution {
		t.Errorf("ceiling %d first failing %d resolution %d", res.Ceiling, res.FirstFailing, res.Resolution)
	}
	if res.Resolution != 9 {
		t.Errorf("resolution %d, want 9", res.Resolution)
	}
	if len(calls) > 12 {
		t.Errorf("%d evaluations, want a bisection (≤ 12): %v", len(calls), calls)
	}
}

func TestSweepNothingPassesAndEverythingPasses(t *testing.T) {
	var calls []int
	res, err := Sweep(context.Background(), synthetic(0, &calls), SweepOptions{Start: 25, Max: 400, ResolutionUsers: 1})
	if err != nil {
		t.Fatal(err)
	}
	if res.Ceiling != 0 || res.FirstFailing != 1 {
		t.Errorf("nothing passes: ceiling %d first failing %d", res.Ceiling, res.FirstFailing)
	}
	calls = nil
	res, err = Sweep(context.Background(), synthetic(10000, &calls), SweepOptions{Start: 25, Max: 400, ResolutionUsers: 1})
	if err != nil {
		t.Fatal(err)
	}
	if res.Ceiling != 400 || res.FirstFailing != 0 || res.FailedClause != "" {
		t.Errorf("everything passes: %+v", res)
	}
	if want := []int{25, 50, 100, 200, 400}; fmt.Sprint(calls) != fmt.Sprint(want) {
		t.Errorf("grid %v, want %v", calls, want)
	}
}

func TestSweepExplicitGrid(t *testing.T) {
	var calls []int
	res, err := Sweep(context.Background(), synthetic(130, &calls), SweepOptions{Grid: []int{50, 100, 200}, ResolutionUsers: 1})
	if err != nil {
		t.Fatal(err)
	}
	if res.Ceiling != 130 || calls[0] != 50 || calls[1] != 100 || calls[2] != 200 {
		t.Errorf("ceiling %d calls %v", res.Ceiling, calls)
	}
}

// A noisy evaluator: pass probability ramps from 1 to 0 across ±width around
// the true ceiling. With repeats, the answer lands within the resolution
// plus the noise band, and every repeat is reported.
func TestSweepNoisyEvaluator(t *testing.T) {
	const ceiling, width, repeats = 300, 4, 3
	for seed := uint64(1); seed <= 20; seed++ {
		rng := rand.New(rand.NewPCG(seed, 7))
		eval := func(_ context.Context, users, _ int) (Repeat, error) {
			p := math.Max(0, math.Min(1, (float64(ceiling+width)-float64(users))/(2*width)))
			tp := 50*float64(min(users, 200)) + rng.NormFloat64()*100
			return Repeat{Pass: rng.Float64() < p, FailedClause: "itl p95", OutputThroughput: tp}, nil
		}
		res, err := Sweep(context.Background(), eval, SweepOptions{Start: 25, Max: 4000, ResolutionUsers: 5, ResolutionFraction: 0.02, Repeats: repeats})
		if err != nil {
			t.Fatal(err)
		}
		if d := math.Abs(float64(res.Ceiling - ceiling)); d > float64(res.Resolution+width) {
			t.Errorf("seed %d: ceiling %d, want %d ± %d", seed, res.Ceiling, ceiling, res.Resolution+width)
		}
		for _, l := range res.Levels {
			if len(l.Repeats) != repeats {
				t.Fatalf("level %d has %d repeats", l.Users, len(l.Repeats))
			}
		}
		if res.Spread <= 0 {
			t.Errorf("seed %d: repeats spread not reported", seed)
		}
	}
}

func TestKneeOfSaturatingCurve(t *testing.T) {
	var levels []Level
	for _, u := range []int{25, 50, 100, 150, 200, 300, 400} {
		levels = append(levels, Level{Users: u, Repeats: []Repeat{{OutputThroughput: 100 * math.Min(float64(u), 150)}}})
	}
	if k := knee(levels); k != 150 {
		t.Errorf("knee %d, want 150", k)
	}
}

func TestSweepStopsOnContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	n := 0
	eval := func(context.Context, int, int) (Repeat, error) {
		n++
		if n == 2 {
			cancel()
		}
		return Repeat{Pass: true}, nil
	}
	if _, err := Sweep(ctx, eval, SweepOptions{Start: 1, Max: 1 << 20, ResolutionUsers: 1}); err == nil {
		t.Fatal("want context error")
	}
	if n != 2 {
		t.Errorf("ran %d levels after cancel", n)
	}
}

// A level measured before the sweep is not run again: the sweep takes its
// verdict and runs only what it lacks.
func TestSweepUsesKnownLevels(t *testing.T) {
	var ran []int
	eval := func(_ context.Context, users, _ int) (Repeat, error) {
		ran = append(ran, users)
		return Repeat{Pass: users <= 40}, nil
	}
	res, err := Sweep(context.Background(), eval, SweepOptions{Grid: []int{36, 44}, ResolutionUsers: 2, Max: 64,
		Known: map[int]Repeat{36: {Pass: true}, 44: {Pass: false, FailedClause: "itl"}}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Ceiling != 40 || res.FirstFailing != 42 {
		t.Errorf("ceiling %d first failing %d, want 40 and 42", res.Ceiling, res.FirstFailing)
	}
	for _, u := range ran {
		if u == 36 || u == 44 {
			t.Errorf("known level %d ran again (ran %v)", u, ran)
		}
	}
}

// A level whose run was still settling says so right after its user count,
// where a progress line cut at its width keeps it; a steady one does not.
func TestLevelLineSaysSettling(t *testing.T) {
	ev := &Evaluation{Summary: &result.Result{Settling: result.SettlingReport{Judged: true, Flagged: true, Ratio: 0.07}}}
	l := Level{Users: 88, Repeats: []Repeat{{FailedClause: "overall ttft p95 2.04s > 300ms", OutputThroughput: 1486, TTFTP95: 2.04, ITLP95: 0.0257, Detail: ev}}}
	want := "bisect 88 users still settling: 1486 tok/s ttft95 2.04s itl95 25.7ms ✗ overall ttft p95 2.04s > 300ms"
	if got := LevelLine("bisect", l, 0); got != want {
		t.Errorf("LevelLine:\n got %q\nwant %q", got, want)
	}
	ev.Summary.Settling.Flagged = false
	if got := LevelLine("bisect", l, 0); strings.Contains(got, "settling") {
		t.Errorf("a steady level's line speaks of settling: %q", got)
	}
}

// TestSweepNeverStatesAnUnjudgedCeiling: a level with too few samples to
// judge a clause, its measured values within the SLA, lets the walk go on
// but never becomes the ceiling: the ceiling is the largest judged pass,
// and the unjudged count above it is reported as unconfirmed (issue 30,
// item 8: a fleet's sweep said 72 users where 72 had 10 samples).
func TestSweepNeverStatesAnUnjudgedCeiling(t *testing.T) {
	eval := func(_ context.Context, users, _ int) (Repeat, error) {
		switch {
		case users <= 50:
			return Repeat{Pass: true}, nil
		case users <= 72:
			return Repeat{Insufficient: true, FewSamplesPass: true, FailedClause: "ttft p95: 10 samples, needs 20"}, nil
		}
		return Repeat{FailedClause: "ttft p95 3s > 1.5s"}, nil
	}
	res, err := Sweep(context.Background(), eval, SweepOptions{Grid: []int{25, 50, 72, 100}, ResolutionUsers: 100})
	if err != nil {
		t.Fatal(err)
	}
	if res.Ceiling != 50 || !res.Unconfirmed || res.UnconfirmedUsers != 72 || res.FirstFailing != 100 {
		t.Errorf("ceiling %d (unconfirmed %v at %d), first failing %d: want 50, unconfirmed at 72, first failing 100",
			res.Ceiling, res.Unconfirmed, res.UnconfirmedUsers, res.FirstFailing)
	}
}

// TestAimUsersIsTheBracketNotOneUser: on short windows a slow deployment can
// leave every count below the first failure unjudged (few samples, within
// the SLA as measured), so no ceiling is judged; the load a multi plan's
// next probe or a study aims at is then the largest such count, not one user
// (a quick multi plan probed 1 user after its first probe, and measured
// nothing a fit could use).
func TestAimUsersIsTheBracketNotOneUser(t *testing.T) {
	eval := func(_ context.Context, users, _ int) (Repeat, error) {
		if users < 150 {
			return Repeat{Insufficient: true, FewSamplesPass: true, FailedClause: "P2 ttft p95: 18 samples, needs 20"}, nil
		}
		return Repeat{FailedClause: "P0 ttft p95 2.3s > 2s"}, nil
	}
	res, err := Sweep(context.Background(), eval, SweepOptions{Grid: []int{25, 50, 100, 200}, ResolutionUsers: 10})
	if err != nil {
		t.Fatal(err)
	}
	if res.Ceiling != 0 || !res.Unconfirmed {
		t.Fatalf("ceiling %d (unconfirmed %v): want no judged ceiling, unconfirmed", res.Ceiling, res.Unconfirmed)
	}
	if got := res.AimUsers(); got != res.UnconfirmedUsers || got < 100 {
		t.Errorf("AimUsers %d: want the unconfirmed count %d (≥ 100)", got, res.UnconfirmedUsers)
	}
	judged := &SweepResult{Ceiling: 120, UnconfirmedUsers: 0}
	if judged.AimUsers() != 120 {
		t.Errorf("AimUsers of a judged ceiling 120: %d", judged.AimUsers())
	}
	if (&SweepResult{}).AimUsers() != 1 {
		t.Errorf("AimUsers of a sweep that failed everywhere: want 1")
	}
}
