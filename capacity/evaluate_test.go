package capacity_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/spoc-project/spoc/capacity"
	"github.com/spoc-project/spoc/config"
	"github.com/spoc-project/spoc/result"
	"github.com/spoc-project/spoc/workload"
)

// quickSetup is the reference configuration, resolved as spoc resolves a
// user's, with one-minute runs.
func quickSetup(t testing.TB) capacity.Setup {
	t.Helper()
	cfg := config.Default()
	cfg.Run.Ramp = config.Duration(10 * time.Second)
	cfg.Run.Warmup = config.Duration(30 * time.Second)
	cfg.Run.Duration = config.Duration(60 * time.Second)
	s, err := cfg.Setup(config.SetupOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return s.Setup
}

func TestEvaluateVirtualAccountsEveryRequest(t *testing.T) {
	s := quickSetup(t)
	ev, err := capacity.NewEvaluator(s, nil)
	if err != nil {
		t.Fatal(err)
	}
	var recs bytes.Buffer
	got, err := ev.Evaluate(context.Background(), map[string]any{"max-num-batched-tokens": 2048}, s.Windows.Run.At(40), capacity.Outputs{Records: &recs})
	if err != nil {
		t.Fatal(err)
	}
	if !got.Virtual || got.Summary == nil || got.Sim == nil || got.Signals == nil {
		t.Fatalf("incomplete evaluation: %+v", got)
	}
	o := got.Summary.Overall
	if o.Requests == 0 || o.OK == 0 || o.OutputTokensPerSecond <= 0 {
		t.Fatalf("no traffic measured: %+v", o)
	}
	if o.Requests != o.OK+o.Errors+o.Cancelled {
		t.Errorf("requests %d != ok %d + errors %d + cancelled %d", o.Requests, o.OK, o.Errors, o.Cancelled)
	}
	// the records were streamed as the run went
	lines := strings.Count(recs.String(), "\n")
	if lines == 0 {
		t.Fatal("no records written")
	}
	if got.Signals.Engine.KVCacheUsage.Samples == 0 || len(got.Signals.GPUs) != s.Deployment.GPUs {
		t.Errorf("telemetry not derived from the simulator: %+v GPUs=%d", got.Signals.Engine.KVCacheUsage, len(got.Signals.GPUs))
	}
	if got.Pass != got.Summary.SLA.Pass || (!got.Pass && got.Failed == "") {
		t.Errorf("verdict inconsistent: pass %v failed %q", got.Pass, got.Failed)
	}
}

func TestEvaluateInfeasibleParams(t *testing.T) {
	s := quickSetup(t)
	ev, err := capacity.NewEvaluator(s, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = ev.Evaluate(context.Background(), map[string]any{"gpu-memory-utilization": 0.05}, s.Windows.Run.At(5), capacity.Outputs{})
	if !capacity.IsInfeasible(err) {
		t.Fatalf("weights cannot fit in 5 %% of memory: want an infeasible error, got %v", err)
	}
}

func TestEvaluateDeterministic(t *testing.T) {
	s := quickSetup(t)
	ev, err := capacity.NewEvaluator(s, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Two runs that wrote nothing would be equal too: each run must have
	// counted requests and written a record for each (and for the ramp's and
	// warm-up's, which the summary leaves out).
	run := func() ([]byte, *capacity.Evaluation) {
		var recs bytes.Buffer
		got, err := ev.Evaluate(context.Background(), nil, s.Windows.Run.At(20), capacity.Outputs{Records: &recs})
		if err != nil {
			t.Fatal(err)
		}
		n := got.Summary.Overall.Requests
		if lines := int64(bytes.Count(recs.Bytes(), []byte("\n"))); n == 0 || lines < n {
			t.Fatalf("the run counted %d requests and wrote %d records; want some, and a record for each", n, lines)
		}
		return recs.Bytes(), got
	}
	a, ea := run()
	b, eb := run()
	if !bytes.Equal(a, b) {
		t.Error("same config and seed gave different records")
	}
	if !reflect.DeepEqual(ea.Summary.Overall, eb.Summary.Overall) {
		t.Errorf("same config and seed gave different summaries:\n%+v\n%+v", ea.Summary.Overall, eb.Summary.Overall)
	}
}

// A missing engine is a programming error, never a silent simulator.
func TestNewEvaluatorRefusesMissingEngine(t *testing.T) {
	s := quickSetup(t)
	s.Launcher = nil
	if _, err := capacity.NewEvaluator(s, nil); !errors.Is(err, capacity.ErrNoEngine) {
		t.Fatalf("NewEvaluator(nil engine) = %v, want ErrNoEngine", err)
	}
}

// Repeats run with their own workload seed: the same offset replays the
// same run, another offset measures other users.
func TestEvaluateSeedOffset(t *testing.T) {
	s := quickSetup(t)
	ev, err := capacity.NewEvaluator(s, nil)
	if err != nil {
		t.Fatal(err)
	}
	run := func(off uint64) [3]float64 {
		l := s.Windows.Run.At(40)
		l.SeedOffset = off
		got, err := ev.Evaluate(context.Background(), map[string]any{}, l, capacity.Outputs{})
		if err != nil {
			t.Fatal(err)
		}
		o := got.Summary.Overall
		return [3]float64{float64(o.Requests), o.TTFT.P95, o.OutputTokensPerSecond}
	}
	a, b, c := run(0), run(0), run(1)
	if a != b {
		t.Errorf("offset 0 twice: %v then %v", a, b)
	}
	if a == c {
		t.Errorf("offset 1 replayed offset 0's run: %v", a)
	}
}

// TestEvaluateStartsUsersOutOfStep: with a constant think time and a
// ramp shorter than it, the users' first turns spread over one think time
// (a random phase each, from the run's seed), not over the ramp alone.
func TestEvaluateStartsUsersOutOfStep(t *testing.T) {
	cfg := config.Default()
	for i := range cfg.Workload.Profiles {
		cfg.Workload.Profiles[i].ThinkTime = workload.Constant(8)
	}
	cfg.Run.Ramp = config.Duration(time.Second)
	cfg.Run.Warmup = config.Duration(20 * time.Second)
	cfg.Run.Duration = config.Duration(10 * time.Second)
	cfg.Run.MidSessionStart = false
	s, err := cfg.Setup(config.SetupOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ev, err := capacity.NewEvaluator(s.Setup, nil)
	if err != nil {
		t.Fatal(err)
	}
	var recs bytes.Buffer
	if _, err := ev.Evaluate(context.Background(), map[string]any{}, s.Windows.Run.At(40), capacity.Outputs{Records: &recs}); err != nil {
		t.Fatal(err)
	}
	first := map[int]time.Time{}
	var t0 time.Time
	dec := json.NewDecoder(&recs)
	for dec.More() {
		var r result.Record
		if err := dec.Decode(&r); err != nil {
			t.Fatal(err)
		}
		if f, ok := first[r.User]; !ok || r.Scheduled.Before(f) {
			first[r.User] = r.Scheduled
		}
		if t0.IsZero() || r.Scheduled.Before(t0) {
			t0 = r.Scheduled
		}
	}
	late := 0
	for _, f := range first {
		if f.Sub(t0) > 2*time.Second {
			late++
		}
	}
	if len(first) != 40 || late < 20 {
		t.Errorf("%d users, %d of them first sent more than 2 s in: want 40 users, most of them spread over the 8 s think time past the 1 s ramp", len(first), late)
	}
}

// TestClientBoundRunIsUnjudged: a run whose load generator fell behind is
// judged neither pass nor fail, whatever its latencies said, and says why
// (issue 30, item 7).
func TestClientBoundRunIsUnjudged(t *testing.T) {
	ev := &capacity.Evaluation{Pass: true, Summary: &result.Result{}}
	ev.Summary.Client = result.ClientReport{Bound: true, DispatchLagP99Ms: 180, LagLimitMs: 50, Reasons: []string{"dispatch lag p99 180 ms > 50 ms"}}
	r := ev.Repeat()
	if r.Pass || !r.Insufficient || r.FewSamplesPass || !strings.Contains(r.FailedClause, "client-bound (dispatch lag p99 180 ms > 50 ms)") {
		t.Errorf("client-bound run as repeat %+v: want unjudged, not a pass, naming the client", r)
	}
	ev.Summary.Client = result.ClientReport{}
	if r := ev.Repeat(); !r.Pass || r.Insufficient {
		t.Errorf("a run the client kept up with: %+v", r)
	}
}
