package tune

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/spoc-project/spoc/engine"
	"github.com/spoc-project/spoc/result"
	"github.com/spoc-project/spoc/search"
)

// A server that runs out of memory whatever the flags (a leftover process
// holds the GPU): every trial would be INFEASIBLE. The study stops after
// search.stop_after_same_failures trials in a row, naming the failure,
// instead of spending its whole budget.
func TestStudyStopsOnTheSameFailure(t *testing.T) {
	spec := testSpec(t, 12)
	spec.StopAfterSameFailures = 3
	eng, err := engine.NewProcess(engine.ProcessOptions{
		Command:       []string{fakeServer, "--port", "{{.Port}}", "--fake-mode", "oom"},
		HealthTimeout: time.Minute, StopTimeout: 5 * time.Second, PollInterval: 10 * time.Millisecond, Dir: t.TempDir(),
	})
	if err != nil {
		t.Fatal(err)
	}
	evaluate := func(ctx context.Context, tc *search.TrialContext) (*result.Result, error) {
		srv, err := eng.Start(ctx, engine.Params(tc.Params))
		if err != nil {
			if errors.Is(err, engine.ErrInfeasible) { // as capacity.Evaluator says it
				err = fmt.Errorf("%w: %w", search.ErrInfeasible, err)
			}
			return nil, err
		}
		srv.Stop(ctx)
		return nil, errors.New("the fake server came up in oom mode")
	}
	res, err := Run(context.Background(), spec, Options{Launcher: eng, Evaluate: evaluate})
	if !errors.Is(err, ErrSameFailures) || !strings.Contains(err.Error(), "out_of_memory") || !strings.Contains(err.Error(), "CUDA out of memory") {
		t.Fatalf("Run = %v, want ErrSameFailures naming the out-of-memory line", err)
	}
	if res == nil || res.States[search.StateInfeasible] != 3 || res.Run.Ran != 3 {
		t.Fatalf("stopped study: %+v", res)
	}
}

// Failures that differ (a rejected flag value is the flags' own) or a trial
// that completes in between reset the count.
func TestSameFailuresCount(t *testing.T) {
	s := &sameFailures{limit: 3}
	oom := func(gib int) error {
		return &engine.Failure{Reason: engine.ReasonOutOfMemory, Detail: fmt.Sprintf("CUDA out of memory. Tried to allocate %d GiB", gib)}
	}
	rejected := func(v int) error {
		return &engine.Failure{Reason: engine.ReasonRejected, Detail: fmt.Sprintf("invalid choice: %d", v)}
	}
	for _, err := range []error{rejected(7), rejected(9), rejected(11), oom(2), nil, oom(2), oom(4)} {
		s.record(err)
	}
	if s.err() != nil {
		t.Fatalf("stopped on %v", s.err())
	}
	s.record(oom(8))
	if !errors.Is(s.err(), ErrSameFailures) {
		t.Fatal("three out-of-memory failures in a row (sizes aside) did not stop the study")
	}
}
