package capacity_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spoc-project/spoc/capacity"
	"github.com/spoc-project/spoc/config"
	"github.com/spoc-project/spoc/engine"
	"github.com/spoc-project/spoc/loadgen/testserver"
	"github.com/spoc-project/spoc/result"
	"github.com/spoc-project/spoc/sim"
	"github.com/spoc-project/spoc/sim/serve"
)

// The live path end to end: an engine reached over HTTP (the simulator's
// server, fast-forwarded), the HTTP load runner with real rendered prompts,
// telemetry scraped from its vLLM and DCGM endpoints, one summary and
// verdict. The same evaluator code runs against a GPU deployment.
func TestEvaluateLiveOverHTTP(t *testing.T) {
	if testing.Short() {
		t.Skip("serves the simulator over HTTP for a few seconds")
	}
	t.Parallel() // real time on a server of its own
	cfg := config.Default()
	dep, err := sim.NewDeployment(cfg.Engine.SimDeployment())
	if err != nil {
		t.Fatal(err)
	}
	srv, err := serve.New(serve.Config{Deployment: dep, TimeScale: 40, Tokenizer: cfg.Workload.Tokenizer, Hostname: "simnode"})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	defer srv.Close()
	defer ts.Close()
	cfg.Engine.Kind = config.EngineExternal
	cfg.Engine.External.URL = ts.URL
	cfg.Engine.External.MetricsURL = []string{ts.URL + "/metrics", ts.URL + "/dcgm/metrics"}
	cfg.Engine.ServedModelName = srv.Model()
	cfg.Telemetry.Interval = config.Duration(250 * time.Millisecond)
	setup, err := cfg.Setup(config.SetupOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ev, err := capacity.NewEvaluator(setup.Setup, nil)
	if err != nil {
		t.Fatal(err)
	}
	var recs bytes.Buffer
	load := capacity.Load{Users: 4, Ramp: 500 * time.Millisecond, Warmup: time.Second, Duration: 3 * time.Second, ThinkTimeScale: 0.01}
	got, err := ev.Evaluate(context.Background(), nil, load, capacity.Outputs{Records: &recs})
	if err != nil {
		t.Fatal(err)
	}
	if got.Virtual {
		t.Error("an external engine must be evaluated over HTTP, not in virtual time")
	}
	o := got.Summary.Overall
	if o.OK == 0 || o.Requests != o.OK+o.Errors+o.Cancelled {
		t.Fatalf("requests not accounted for: %+v", o)
	}
	if o.Errors != 0 {
		t.Errorf("%d errors against a healthy server: %v", o.Errors, o.ErrorsByClass)
	}
	n := 0
	_, err = result.ReadAll(strings.NewReader(recs.String()), "records", func(r *result.Record) error {
		n++
		if r.Status == result.StatusOK && (r.PromptTokens == 0 || r.OutputTokens == 0) {
			t.Errorf("record %s lacks server-reported usage: %+v", r.RequestID, r)
		}
		return nil
	})
	if err != nil || n == 0 {
		t.Fatalf("records: %d read, %v", n, err)
	}
	if got.Signals == nil {
		t.Fatal("no telemetry joined to the run")
	}
	if got.Signals.Engine.Running.Samples == 0 || len(got.Signals.GPUs) != cfg.Engine.GPUs {
		t.Errorf("telemetry: running samples %d, GPUs %d (want %d)", got.Signals.Engine.Running.Samples, len(got.Signals.GPUs), cfg.Engine.GPUs)
	}
	if got.Signals.Engine.PromptTokens <= 0 {
		t.Errorf("the server's prompt-token counter did not move: %+v", got.Signals.Engine)
	}
}

// A server that passes the preflight and then answers every request with
// an error served nothing: the evaluation is an error, not a failed level
// a sweep would read as a capacity of zero.
func TestEvaluateLiveEveryRequestFailed(t *testing.T) {
	t.Parallel() // real time on a server of its own
	srv := testserver.Start(testserver.Config{FirstTokenDelay: time.Millisecond, TokenInterval: time.Millisecond,
		FaultFor: func(r *testserver.Request) testserver.Fault {
			if r.MaxTokens == 1 {
				return testserver.FaultNone // the preflight's one-token request
			}
			return testserver.Fault503
		}})
	defer srv.Close()
	cfg := config.Default()
	cfg.Engine.Kind = config.EngineExternal
	cfg.Engine.External.URL = srv.URL
	cfg.Telemetry.Enabled = false
	setup, err := cfg.Setup(config.SetupOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ev, err := capacity.NewEvaluator(setup.Setup, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ev.Close(context.Background())
	load := capacity.Load{Users: 2, Duration: 500 * time.Millisecond, ThinkTimeScale: 0.001}
	_, err = ev.Evaluate(context.Background(), nil, load, capacity.Outputs{})
	if !errors.Is(err, capacity.ErrNothingServed) || !strings.Contains(err.Error(), "503") {
		t.Fatalf("Evaluate = %v, want ErrNothingServed naming the 503s", err)
	}
}

// countingLauncher serves the simulator in-process over HTTP and counts
// the servers it starts and the cache resets they get.
type countingLauncher struct {
	t              *testing.T
	dep            sim.Deployment
	starts, resets int
	flags          []string
	// refuseReset makes every server answer the reset as a vLLM without
	// VLLM_SERVER_DEV_MODE does.
	refuseReset bool
}

func (l *countingLauncher) Start(ctx context.Context, p engine.Params) (engine.Server, error) {
	l.starts++
	l.flags = append(l.flags, fmt.Sprint(map[string]any(p)))
	srv, err := serve.New(serve.Config{Deployment: l.dep, TimeScale: 40, Tokenizer: "o200k_base"})
	if err != nil {
		return nil, err
	}
	ts := httptest.NewServer(srv.Handler())
	return &countingServer{l: l, srv: srv, ts: ts}, nil
}

type countingServer struct {
	l   *countingLauncher
	srv *serve.Server
	ts  *httptest.Server
}

func (s *countingServer) Endpoint() engine.Endpoint {
	return engine.Endpoint{BaseURL: s.ts.URL, Model: s.srv.Model()}
}
func (s *countingServer) ResetCache(context.Context) error {
	if s.l.refuseReset {
		return fmt.Errorf("POST /reset_prefix_cache: 404: %w", engine.ErrResetUnsupported)
	}
	s.l.resets++
	return nil
}
func (s *countingServer) Stop(context.Context) error {
	s.ts.Close()
	s.srv.Close()
	return nil
}

// A server is started once per flag set and reused, cache reset, while
// the evaluations ask for the same flags: levels and repeats of a sweep
// cost one start.
func TestEvaluatorReusesServerPerFlagSet(t *testing.T) {
	if testing.Short() {
		t.Skip("serves the simulator over HTTP for a few seconds")
	}
	t.Parallel() // real time on a server of its own
	cfg := config.Default()
	cfg.Engine.Kind = config.EngineExternal
	cfg.Engine.External.URL = "http://127.0.0.1:1" // replaced by the counting launcher
	cfg.Telemetry.Enabled = false
	setup, err := cfg.Setup(config.SetupOptions{})
	if err != nil {
		t.Fatal(err)
	}
	l := &countingLauncher{t: t, dep: setup.Deployment.Sim}
	setup.Launcher = l
	ev, err := capacity.NewEvaluator(setup.Setup, nil)
	if err != nil {
		t.Fatal(err)
	}
	load := capacity.Load{Users: 2, Warmup: 200 * time.Millisecond, Duration: 400 * time.Millisecond, ThinkTimeScale: 0.001}
	a := map[string]any{"max-num-seqs": 64}
	b := map[string]any{"max-num-seqs": 32}
	runs := []map[string]any{a, a, a, b, b}
	for i, p := range runs {
		if _, err := ev.Evaluate(context.Background(), p, load.At(2+i%2), capacity.Outputs{}); err != nil {
			t.Fatalf("run %d: %v", i, err)
		}
	}
	if err := ev.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if l.starts != 2 || l.resets != 3 {
		t.Errorf("%d starts and %d cache resets for 5 runs of 2 flag sets (%v), want 2 and 3", l.starts, l.resets, l.flags)
	}
	if u := ev.Usage(); u.Starts != 2 || u.Resets != 3 || u.Seconds <= 0 {
		t.Errorf("usage %+v", u)
	}
}

// Ctrl-C during a run on an external engine cancels the run's requests
// and says so; it does not claim to stop a server spoc never started, and
// the server keeps serving.
func TestEvaluateLiveInterruptedLeavesExternalServer(t *testing.T) {
	t.Parallel() // real time on a server of its own
	srv := testserver.Start(testserver.Config{FirstTokenDelay: time.Millisecond, TokenInterval: 5 * time.Millisecond})
	defer srv.Close()
	cfg := config.Default()
	cfg.Engine.Kind = config.EngineExternal
	cfg.Engine.External.URL = srv.URL
	cfg.Telemetry.Enabled = false
	setup, err := cfg.Setup(config.SetupOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	ev, err := capacity.NewEvaluator(setup.Setup, slog.New(slog.NewTextHandler(&log, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer ev.Close(context.Background())
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(700*time.Millisecond, cancel)
	load := capacity.Load{Users: 2, Duration: time.Minute, ThinkTimeScale: 0.001}
	got, err := ev.Evaluate(ctx, nil, load, capacity.Outputs{})
	if !errors.Is(err, context.Canceled) || got == nil || !got.Interrupted {
		t.Fatalf("Evaluate after Ctrl-C = %+v, %v; want the partial run and context.Canceled", got, err)
	}
	msg := log.String()
	if strings.Contains(msg, "stopping the server") || !strings.Contains(msg, "the external server keeps running (spoc never stops a server it did not start)") {
		t.Errorf("log on interrupt:\n%s", msg)
	}
	// the server is still there, and the next evaluation uses it
	if _, err := ev.Evaluate(context.Background(), nil, capacity.Load{Users: 1, Duration: 300 * time.Millisecond, ThinkTimeScale: 0.001}, capacity.Outputs{}); err != nil {
		t.Errorf("the next run on the external server: %v", err)
	}
}

// WatchRuns reports a live run from its first second, with the run's
// planned length, and keeps reporting while it goes on; an external
// server is never said to be started.
func TestWatchRunsReportsFromTheFirstSecond(t *testing.T) {
	t.Parallel() // real time on a server of its own
	srv := testserver.Start(testserver.Config{FirstTokenDelay: time.Millisecond, TokenInterval: 5 * time.Millisecond})
	defer srv.Close()
	cfg := config.Default()
	cfg.Engine.Kind = config.EngineExternal
	cfg.Engine.External.URL = srv.URL
	cfg.Telemetry.Enabled = false
	setup, err := cfg.Setup(config.SetupOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ev, err := capacity.NewEvaluator(setup.Setup, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ev.Close(context.Background())
	var mu sync.Mutex
	var got []capacity.RunStatus
	ev.WatchRuns(func(st capacity.RunStatus) {
		mu.Lock()
		got = append(got, st)
		mu.Unlock()
	})
	load := capacity.Load{Users: 2, Warmup: 500 * time.Millisecond, Duration: 2 * time.Second, ThinkTimeScale: 0.001}
	if _, err := ev.Evaluate(context.Background(), nil, load, capacity.Outputs{}); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) < 2 {
		t.Fatalf("%d reports during a 2.5 s run, want one a second", len(got))
	}
	for _, st := range got {
		if st.Starting {
			t.Errorf("an external server reported as started: %+v", st)
		}
	}
	if first := got[0]; first.Elapsed <= 0 || first.Elapsed > 1500*time.Millisecond || first.Length != 2500*time.Millisecond || first.Load.Users != 2 {
		t.Errorf("first report %+v: want it about a second into the 2.5 s run at 2 users", first)
	}
	if last := got[len(got)-1]; last.Progress.Requests == 0 {
		t.Errorf("the reports never counted a finished request: %+v", last)
	}
}

// A server that refuses the cache reset is reused all the same, and every
// run after its first says it started warm: the cache the previous run
// left shortens its prompts' prefill.
func TestEvaluatorFlagsWarmRunsWhenResetRefused(t *testing.T) {
	if testing.Short() {
		t.Skip("serves the simulator over HTTP for a few seconds")
	}
	t.Parallel()
	cfg := config.Default()
	cfg.Engine.Kind = config.EngineExternal
	cfg.Engine.External.URL = "http://127.0.0.1:1" // replaced by the counting launcher
	cfg.Telemetry.Enabled = false
	setup, err := cfg.Setup(config.SetupOptions{})
	if err != nil {
		t.Fatal(err)
	}
	l := &countingLauncher{t: t, dep: setup.Deployment.Sim, refuseReset: true}
	setup.Launcher = l
	ev, err := capacity.NewEvaluator(setup.Setup, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ev.Close(context.Background())
	load := capacity.Load{Users: 2, Warmup: 200 * time.Millisecond, Duration: 300 * time.Millisecond, ThinkTimeScale: 0.001}
	a := map[string]any{"max-num-seqs": 64}
	b := map[string]any{"max-num-seqs": 32}
	for i, tc := range []struct {
		params map[string]any
		warm   bool
	}{{a, false}, {a, true}, {b, false}, {b, true}, {b, true}} {
		got, err := ev.Evaluate(context.Background(), tc.params, load, capacity.Outputs{})
		if err != nil {
			t.Fatalf("run %d: %v", i, err)
		}
		if (got.WarmCache != "") != tc.warm {
			t.Errorf("run %d: warm cache %q, want warm=%v", i, got.WarmCache, tc.warm)
		}
		if tc.warm && !strings.Contains(got.WarmCache, "refused the prefix-cache reset") {
			t.Errorf("run %d: warm cache reason %q does not name the refused reset", i, got.WarmCache)
		}
	}
	if u := ev.Usage(); u.Starts != 2 || u.WarmRuns != 3 || u.Resets != 0 {
		t.Errorf("usage %+v, want 2 starts, 3 warm runs, no reset", u)
	}
}
