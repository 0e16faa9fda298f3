package tune

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spoc-project/spoc/result"
	"github.com/spoc-project/spoc/search"
)

// gauge counts evaluations in flight and remembers the most at once.
type gauge struct {
	now, peak atomic.Int32
}

func (g *gauge) enter() {
	n := g.now.Add(1)
	for {
		p := g.peak.Load()
		if n <= p || g.peak.CompareAndSwap(p, n) {
			return
		}
	}
}

func (g *gauge) leave() { g.now.Add(-1) }

// parallelWorkers returns n workers over synthetic whose evaluations
// overlap (each takes hold), counting per worker how many it ran and
// failing if one worker runs two at once (its server would be shared).
func parallelWorkers(n int, hold time.Duration, g *gauge, ran []atomic.Int32) []Worker {
	ws := make([]Worker, n)
	for i := range ws {
		var busy atomic.Bool
		ws[i].Evaluate = func(ctx context.Context, tc *search.TrialContext) (*result.Result, error) {
			if !busy.CompareAndSwap(false, true) {
				return nil, errors.New("two trials at once on one worker's server")
			}
			defer busy.Store(false)
			g.enter()
			defer g.leave()
			ran[i].Add(1)
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(hold):
			}
			return synthetic(ctx, tc)
		}
	}
	return ws
}

// TestRunParallel: search.parallel 3 runs the study's 12 trials three at a
// time in one process, each worker on its own evaluator, with every
// sampler; exactly the budget is stored and progress is reported once
// per trial, one call at a time. Run with -race: the study storage, the
// shared sampler, the evaluation and progress are used by three
// goroutines.
func TestRunParallel(t *testing.T) {
	for _, sampler := range []string{"tpe", "nsga2", "random", "grid"} {
		t.Run(sampler, func(t *testing.T) {
			spec := testSpec(t, 12)
			spec.Sampler = sampler
			spec.Parallel = 3
			var g gauge
			ran := make([]atomic.Int32, 3)
			var inProgress atomic.Int32
			var reports []Progress
			var mu sync.Mutex
			o := Options{Launcher: &nopEngine{}, Workers: parallelWorkers(3, 30*time.Millisecond, &g, ran), ArtifactsRoot: t.TempDir(),
				HeartbeatInterval: 50 * time.Millisecond,
				Progress: func(p Progress) {
					if inProgress.Add(1) != 1 {
						t.Error("progress called concurrently")
					}
					defer inProgress.Add(-1)
					mu.Lock()
					reports = append(reports, p)
					mu.Unlock()
				}}
			res, err := Run(context.Background(), spec, o)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Trials) != 12 || res.Run.Ran+res.Run.Reused != 12 {
				t.Fatalf("%d trials stored, %+v; want 12", len(res.Trials), res.Run)
			}
			for _, tr := range res.Trials {
				if !tr.State.Finished() {
					t.Errorf("trial %d is %s", tr.Number, tr.State)
				}
			}
			if p := g.peak.Load(); p != 3 {
				t.Errorf("at most %d trials ran at once, want 3", p)
			}
			for i := range ran {
				if ran[i].Load() == 0 {
					t.Errorf("worker %d ran no trial", i+1)
				}
			}
			if len(reports) != 12 || reports[len(reports)-1].Finished != 12 {
				t.Errorf("%d progress reports; want 12 ending at 12 finished", len(reports))
			}
			workers := map[string]bool{}
			for _, tr := range res.Trials {
				if w, ok := tr.SystemAttrs["worker"].(string); ok {
					workers[w] = true
				}
			}
			if len(workers) != 3 {
				t.Errorf("trials recorded by workers %v, want 3 distinct", workers)
			}
		})
	}
}

// TestRunParallelNeedsAnEvaluatorPerTrial: a parallel study given one
// evaluator is refused, not run one at a time.
func TestRunParallelNeedsAnEvaluatorPerTrial(t *testing.T) {
	spec := testSpec(t, 6)
	spec.Parallel = 3
	_, err := Run(context.Background(), spec, Options{Launcher: &nopEngine{}, Evaluate: synthetic})
	if err == nil || !strings.Contains(err.Error(), "search.parallel is 3 but 1 trial evaluators") {
		t.Fatalf("Run = %v, want refused", err)
	}
}

// TestRunParallelInterrupted: Ctrl-C while three trials run re-queues all
// three; no trial is left RUNNING and the study resumes to its budget.
func TestRunParallelInterrupted(t *testing.T) {
	spec := testSpec(t, 6)
	spec.Parallel = 3
	var g gauge
	ran := make([]atomic.Int32, 3)
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		for g.now.Load() < 3 {
			time.Sleep(5 * time.Millisecond)
		}
		cancel()
	}()
	o := Options{Launcher: &nopEngine{}, Workers: parallelWorkers(3, time.Minute, &g, ran), HeartbeatInterval: 50 * time.Millisecond}
	res, err := Run(ctx, spec, o)
	if !errors.Is(err, context.Canceled) || !res.Run.Interrupted {
		t.Fatalf("Run = %v, %+v; want interrupted", err, res.Run)
	}
	if res.States[search.StateRunning] != 0 || res.States[search.StateWaiting] != 3 {
		t.Fatalf("after Ctrl-C: %v; want the 3 running trials re-queued", res.States)
	}
	o.Workers = parallelWorkers(3, time.Millisecond, &g, ran)
	res, err = Run(context.Background(), spec, o)
	if err != nil {
		t.Fatal(err)
	}
	finished := 0
	for _, tr := range res.Trials {
		if tr.State.Finished() && tr.SystemAttrs["requeued_as"] == nil {
			finished++
		}
	}
	if finished != 6 {
		t.Errorf("%d trials finished after the resume (%v), want the budget of 6", finished, res.States)
	}
}
