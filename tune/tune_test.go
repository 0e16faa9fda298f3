package tune

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/spoc-project/spoc/engine"
	"github.com/spoc-project/spoc/result"
	"github.com/spoc-project/spoc/search"
)

var fakeServer string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "spoc-tune-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fakeServer = filepath.Join(dir, "fakeserver")
	build := exec.Command("go", "build", "-o", fakeServer, "../engine/testdata/fakeserver")
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build engine/testdata/fakeserver:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// nopEngine is a launcher the fake evaluators never use.
type nopEngine struct{}

func (e *nopEngine) Start(context.Context, engine.Params) (engine.Server, error) {
	return nil, errors.New("nopEngine: not startable")
}

// testSpec is a small study over two flags with a synthetic chunked
// prefill trade-off.
func testSpec(t *testing.T, trials int) Spec {
	spec := referenceSpec()
	spec.Trials = trials
	spec.Population = 4
	spec.Storage = "sqlite:" + filepath.Join(t.TempDir(), "study.db")
	spec.Study = "test"
	spec.Users = 50
	spec.Space = []search.ParamSpec{
		{Name: "max-num-batched-tokens", Type: "int", Low: 256, High: 16384, Log: true},
		{Name: "gpu-memory-utilization", Type: "float", Low: 0.8, High: 0.95},
	}
	spec.BaseParams = search.Params{"tensor-parallel-size": 4, "max-model-len": 131072, "max-num-seqs": 64}
	return spec
}

// synthetic: bigger token budgets cut TTFT and raise ITL; memory
// utilisation above 0.93 "runs out of memory"; 0.80–0.81 fails outright.
func synthetic(ctx context.Context, tc *search.TrialContext) (*result.Result, error) {
	p := tc.Params
	b := float64(p.Int("max-num-batched-tokens"))
	u := p.Float("gpu-memory-utilization")
	switch {
	case u > 0.93:
		// as capacity's evaluator says it: the engine's failure in
		// search's terms
		return nil, fmt.Errorf("%w: %w", search.ErrInfeasible, &engine.Failure{Reason: engine.ReasonOutOfMemory, Detail: "torch.OutOfMemoryError", ExitCode: 1})
	case u < 0.81:
		return nil, errors.New("connection refused")
	}
	s := result.Stats{Name: "overall", OK: 100, Requests: 100,
		OutputTokensPerSecond: 1000 + 100*math.Log2(b),
		TTFT:                  result.Latency{P95: 4e6 / b},
		ITL:                   result.Latency{P95: 10 + b/100}}
	return &result.Result{Overall: s, Profiles: []result.Stats{s}}, nil
}

func TestRunStudyResumesAndClassifies(t *testing.T) {
	spec := testSpec(t, 10)
	eng := &nopEngine{}
	var lines bytes.Buffer
	var seen []Progress
	o := Options{Launcher: eng, Evaluate: synthetic, ArtifactsRoot: t.TempDir(), Progress: func(p Progress) {
		seen = append(seen, p)
		if err := WriteProgress(&lines, p); err != nil {
			t.Error(err)
		}
	}}
	res, err := Run(context.Background(), spec, o)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Trials) != 10 || len(seen) != 10 || seen[9].Finished != 10 || seen[9].Total != 10 {
		t.Fatalf("ran %d trials, %d progress reports (last %+v)", len(res.Trials), len(seen), seen[len(seen)-1])
	}
	for _, tr := range res.Trials {
		u := tr.Params.Float("gpu-memory-utilization")
		want := search.StateComplete
		switch {
		case u > 0.93:
			want = search.StateInfeasible
			if tr.UserAttrs["failure_reason"] != "out_of_memory" {
				t.Errorf("trial %d: failure_reason = %v", tr.Number, tr.UserAttrs["failure_reason"])
			}
		case u < 0.81:
			want = search.StateFail
		}
		if tr.State != want {
			t.Errorf("trial %d (utilisation %.3f) is %s, want %s", tr.Number, u, tr.State, want)
		}
		if tr.State == search.StateComplete {
			if len(tr.Values) != 3 || len(tr.Constraints) != 3 || tr.UserAttrs["metrics"] == nil {
				t.Errorf("trial %d: values %v constraints %v attrs %v", tr.Number, tr.Values, tr.Constraints, tr.UserAttrs)
			}
			dir := filepath.Join(o.ArtifactsRoot, "test", fmt.Sprintf("trial-%05d", tr.Number))
			if tr.Artifacts != dir {
				t.Errorf("trial %d artefacts in %q, want %q", tr.Number, tr.Artifacts, dir)
			}
		}
	}
	if res.States[search.StateComplete] == 0 || len(res.Front) == 0 {
		t.Fatalf("no complete trial or empty front: %v", res.States)
	}
	for _, l := range strings.Split(strings.TrimSpace(lines.String()), "\n") {
		if !strings.HasPrefix(l, "trial ") || !strings.Contains(l, " front ") {
			t.Errorf("progress line %q", l)
		}
	}

	// The same command with a larger budget continues the same study.
	spec.Trials = 14
	seen = nil
	res2, err := Run(context.Background(), spec, o)
	if err != nil {
		t.Fatal(err)
	}
	if len(res2.Trials) != 14 || len(seen) != 4 || res2.Run.Ran != 4 {
		t.Fatalf("resume ran %d (total %d trials, %d progress)", res2.Run.Ran, len(res2.Trials), len(seen))
	}
	for i := range res.Trials {
		if res.Trials[i].Params.Key() != res2.Trials[i].Params.Key() {
			t.Errorf("trial %d changed on resume", i)
		}
	}
	// The load is part of the study: the trials record it, a resume at
	// another load is refused, and StudyUsers finds it for an automatic one.
	if u := trialUsers(res2.Trials[0]); u != 50 {
		t.Errorf("trial 0 users attribute = %d", u)
	}
	if u, err := StudyUsers(context.Background(), spec.Storage, "test"); err != nil || u != 50 {
		t.Errorf("StudyUsers = %d, %v", u, err)
	}
	if u, err := StudyUsers(context.Background(), spec.Storage, "nope"); err != nil || u != 0 {
		t.Errorf("StudyUsers of a missing study = %d, %v", u, err)
	}
	spec.Users = 60
	if _, err := Run(context.Background(), spec, o); err == nil || !strings.Contains(err.Error(), "50 users") {
		t.Errorf("resume at another load: err = %v", err)
	}
	spec.Users = 0
	if _, err := Run(context.Background(), spec, o); err == nil || !strings.Contains(err.Error(), "search.users") {
		t.Errorf("automatic load not resolved: err = %v", err)
	}
	spec.Users = 50
	// A changed space is a different study.
	spec.Space[0].High = 8192
	if _, err := Run(context.Background(), spec, o); err == nil || !strings.Contains(err.Error(), "different parameter space") {
		t.Errorf("changed space: err = %v", err)
	}
}

func TestRunRefusesExternalAndMissingCapacity(t *testing.T) {
	spec := testSpec(t, 2)
	ext, err := engine.NewExternal("http://127.0.0.1:1", "m", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Run(context.Background(), spec, Options{Launcher: ext, Evaluate: synthetic}); err == nil || !strings.Contains(err.Error(), "external") {
		t.Errorf("external engine: err = %v", err)
	}
	spec.Objectives = append(spec.Objectives, search.ObjectiveSpec{Metric: "capacity", Direction: "maximize"})
	if _, err := Run(context.Background(), spec, Options{Launcher: &nopEngine{}, Evaluate: synthetic}); err == nil || !strings.Contains(err.Error(), "capacity") {
		t.Errorf("capacity without CapacityFunc: err = %v", err)
	}
	users := 0
	res, err := Run(context.Background(), spec, Options{Launcher: &nopEngine{}, Evaluate: synthetic,
		Capacity: func(ctx context.Context, tc *search.TrialContext) (int, error) {
			users += 10
			return users, nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tr := range res.Trials {
		if tr.State == search.StateComplete && (len(tr.Values) != 4 || tr.Values[3] <= 0) {
			t.Errorf("trial %d values %v lack the capacity", tr.Number, tr.Values)
		}
	}
}

func TestRunNoRequestsIsInfeasible(t *testing.T) {
	spec := testSpec(t, 1)
	res, err := Run(context.Background(), spec, Options{Launcher: &nopEngine{}, Evaluate: func(context.Context, *search.TrialContext) (*result.Result, error) {
		return &result.Result{}, nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Trials[0].State != search.StateInfeasible {
		t.Errorf("state %s, want INFEASIBLE", res.Trials[0].State)
	}
}

// TestInterruptStopsServerAndResumes cancels the study while a real server
// process (with a grandchild) serves the first trial: nothing may survive,
// and the same study then completes its budget.
func TestInterruptStopsServerAndResumes(t *testing.T) {
	spec := testSpec(t, 3)
	rec := filepath.Join(t.TempDir(), "record.json")
	gc := filepath.Join(t.TempDir(), "grandchild.pid")
	eng, err := engine.NewProcess(engine.ProcessOptions{
		Command:       []string{fakeServer, "--port", "{{.Port}}", "--fake-record", rec, "--fake-grandchild", gc},
		HealthTimeout: time.Minute, StopTimeout: 5 * time.Second, PollInterval: 10 * time.Millisecond, Dir: t.TempDir(),
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	started := make(chan struct{})
	evaluate := func(ctx context.Context, tc *search.TrialContext) (*result.Result, error) {
		// The evaluator owns the server it starts (capacity.Evaluator
		// stops it when a run fails or is interrupted).
		srv, err := eng.Start(ctx, engine.Params(tc.Params))
		if err != nil {
			return nil, err
		}
		defer srv.Stop(context.WithoutCancel(ctx))
		close(started)
		<-ctx.Done() // a long run, interrupted
		return nil, ctx.Err()
	}
	go func() {
		<-started
		cancel() // what Ctrl-C does through signal.NotifyContext
	}()
	res, err := Run(ctx, spec, Options{Launcher: eng, Evaluate: evaluate, ArtifactsRoot: t.TempDir()})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Run = %v, want context.Canceled", err)
	}
	var r struct{ PID int }
	b, _ := os.ReadFile(rec)
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	b, _ = os.ReadFile(gc)
	var gpid int
	fmt.Sscan(string(b), &gpid)
	for _, pid := range []int{r.PID, gpid} {
		if pid <= 0 || alive(pid) {
			t.Errorf("process %d survived the interrupted study", pid)
		}
	}
	if !res.Run.Interrupted || res.States[search.StateWaiting] != 1 {
		t.Errorf("after interrupt: run %+v, states %v", res.Run, res.States)
	}
	res, err = Run(context.Background(), spec, Options{Launcher: &nopEngine{}, Evaluate: synthetic})
	if err != nil {
		t.Fatal(err)
	}
	if res.States[search.StateWaiting] != 0 || res.States[search.StateRunning] != 0 || res.Run.Ran != 3 {
		t.Errorf("resumed study: run %+v, states %v", res.Run, res.States)
	}
}

// alive reports whether pid runs (zombies count as gone).
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return syscall.Kill(pid, 0) == nil && !os.IsNotExist(err)
	}
	i := bytes.LastIndexByte(b, ')')
	return i > 0 && i+2 < len(b) && b[i+2] != 'Z' && b[i+2] != 'X'
}

// BenchmarkStudy60 is the cost of the study loop itself for the default
// 60-trial NSGA-II study (SQLite storage, sampling, progress with front),
// with an evaluator that costs nothing: what tune adds to every trial.
func BenchmarkStudy60(b *testing.B) {
	for i := 0; i < b.N; i++ {
		spec := referenceSpec()
		spec.Users = 200
		spec.Storage = "sqlite:" + filepath.Join(b.TempDir(), "study.db")
		fast := func(ctx context.Context, tc *search.TrialContext) (*result.Result, error) {
			p := tc.Params
			s := result.Stats{OK: 1, OutputTokensPerSecond: float64(p.Int("max-num-seqs")), TTFT: result.Latency{P95: 1e6 / float64(p.Int("max-num-batched-tokens"))}, ITL: result.Latency{P95: p.Float("gpu-memory-utilization")}}
			return &result.Result{Overall: s}, nil
		}
		if _, err := Run(context.Background(), spec, Options{Launcher: &nopEngine{}, Evaluate: fast, Progress: func(Progress) {}}); err != nil {
			b.Fatal(err)
		}
	}
}

// A study is not resumed with another setup: its trials would not compare.
func TestRunRefusesAnotherFingerprint(t *testing.T) {
	spec := testSpec(t, 2)
	spec.Fingerprint = map[string]string{"gpu": "H100-SXM", "workload": "abc"}
	if _, err := Run(context.Background(), spec, Options{Launcher: &nopEngine{}, Evaluate: synthetic}); err != nil {
		t.Fatal(err)
	}
	spec.Trials = 4
	spec.Fingerprint = map[string]string{"gpu": "H200-SXM", "workload": "abc"}
	_, err := Run(context.Background(), spec, Options{Launcher: &nopEngine{}, Evaluate: synthetic})
	if err == nil || !strings.Contains(err.Error(), `gpu "H100-SXM" → "H200-SXM"`) || strings.Contains(err.Error(), "workload") {
		t.Fatalf("resume with another GPU: err = %v", err)
	}
	spec.Fingerprint["gpu"] = "H100-SXM"
	if _, err := Run(context.Background(), spec, Options{Launcher: &nopEngine{}, Evaluate: synthetic}); err != nil {
		t.Fatalf("resume with the same setup: %v", err)
	}
}
