package serve_test

import (
	"context"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/spoc-project/spoc/loadgen"
	"github.com/spoc-project/spoc/result"
	"github.com/spoc-project/spoc/sim"
	"github.com/spoc-project/spoc/sim/serve"
	"github.com/spoc-project/spoc/workload"
)

// TestLoadgenAgainstServer runs the HTTP load runner briefly against the
// simulator's server: real prompts from the reference workload, streamed
// replies, usage with cached tokens; and against the vLLM-faithful mode,
// whose reasoning and multi-token chunks the client must count from usage.
func TestLoadgenAgainstServer(t *testing.T) {
	if testing.Short() {
		t.Skip("renders the reference workload's prompts")
	}
	t.Parallel() // seconds of fixed-length runs, each on a server of its own
	for _, faithful := range []bool{false, true} {
		name := "default"
		if faithful {
			name = "vllm-faithful"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			loadgenAgainstServer(t, faithful)
		})
	}
}

func loadgenAgainstServer(t *testing.T, faithful bool) {
	spec, wl := sim.ReferenceDeploymentSpec(), workload.DefaultSpec()
	dep, err := sim.NewDeployment(spec)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := serve.New(serve.Config{Deployment: dep, TimeScale: 50, Tokenizer: wl.Tokenizer,
		VLLMFaithful: faithful, EnablePromptTokensDetails: faithful})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	defer srv.Close()
	defer ts.Close()
	gen, err := workload.New(wl, spec.MaxModelLen)
	if err != nil {
		t.Fatal(err)
	}
	run, err := loadgen.New(loadgen.Options{
		Target: ts.URL, Model: srv.Model(), Users: 3, Duration: 4 * time.Second, ThinkTimeScale: 0.005,
		ExactOutputLength: true, RunID: "it", Renderer: gen,
	})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var recs []*result.Record
	_, err = run.Run(context.Background(), gen, result.SinkFunc(func(r *result.Record) error {
		mu.Lock()
		recs = append(recs, r)
		mu.Unlock()
		return nil
	}))
	if err != nil {
		t.Fatal(err)
	}
	var ok, cached int
	for _, r := range recs {
		if r.Status != result.StatusOK {
			if r.Status != result.StatusCancelled {
				t.Errorf("record %s: %s %s", r.RequestID, r.Status, r.Error)
			}
			continue
		}
		ok++
		if r.OutputTokens != r.MaxTokens {
			t.Errorf("record %s: %d output tokens, asked for exactly %d", r.RequestID, r.OutputTokens, r.MaxTokens)
		}
		// The history the client sends back holds the earlier replies'
		// content only: a faithful gpt-oss reply's reasoning is dropped, as
		// vLLM's harmony template drops it, so later turns fall short of
		// the workload's target (which counts whole replies).
		short := faithful && r.Turn > 0
		if d := r.PromptTokens - r.PromptTokensTarget; (d < 0 && !short) || d > 8*(r.Turn+2)+8 {
			t.Errorf("record %s: server counted %d prompt tokens for a %d-token target", r.RequestID, r.PromptTokens, r.PromptTokensTarget)
		}
		if r.Turn > 0 && r.CachedTokens > 0 {
			cached++
		}
	}
	if ok < 3 {
		t.Fatalf("only %d requests completed", ok)
	}
	if cached == 0 {
		t.Error("no later turn reported cached tokens")
	}
	t.Logf("%d records, %d ok, %d later turns with cached tokens", len(recs), ok, cached)
}

// driftRun runs a short multi-turn gpt-oss conversation through the HTTP
// client against the vLLM-faithful stand-in (reasoning before content, the
// reasoning dropped from the history the client sends back) and returns
// the per-profile summary the client computes.
func driftRun(t *testing.T, reasoningShare float64) result.Stats {
	t.Helper()
	spec := sim.ReferenceDeploymentSpec()
	dep, err := sim.NewDeployment(spec)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := serve.New(serve.Config{Deployment: dep, TimeScale: 50, Tokenizer: "o200k_base", VLLMFaithful: true})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	defer srv.Close()
	defer ts.Close()
	wl := workload.Spec{Seed: 7, Tokenizer: "o200k_base", ExactOutputLength: true, ReasoningShare: reasoningShare,
		Geometry: workload.Geometry{Kind: workload.GeometryNone},
		Profiles: []workload.Profile{{Name: "P0", Weight: 1,
			ContextStart: workload.Constant(600), MaxContext: 20000,
			Growth: workload.Constant(100), OutputTokens: workload.Constant(400),
			ThinkTime: workload.Constant(0.1), AtMax: "new-session"}}}
	gen, err := workload.New(wl, spec.MaxModelLen)
	if err != nil {
		t.Fatal(err)
	}
	run, err := loadgen.New(loadgen.Options{Target: ts.URL, Model: srv.Model(), Users: 2, Duration: 5 * time.Second,
		ThinkTimeScale: 0.01, ExactOutputLength: true, RunID: "drift", Renderer: gen})
	if err != nil {
		t.Fatal(err)
	}
	sum := result.NewSummary(result.DefaultSLA(), result.Window{})
	rep, err := run.Run(context.Background(), gen, sum)
	if err != nil {
		t.Fatal(err)
	}
	sum.SetWindow(rep.Window)
	res := sum.Result()
	if len(res.Profiles) != 1 || res.Profiles[0].Drift.Requests < 6 {
		t.Fatalf("too few requests with a server prompt count: %+v", res.Profiles)
	}
	return res.Profiles[0]
}

// Under the default history policy (final content only) a gpt-oss
// conversation's prompts stay within the drift limit of the plan when the
// workload plans without the reasoning share the server streams (half of
// every reply on the stand-in); planned without it, later turns run short
// of their targets by about a third and the run is flagged.
func TestPromptDriftAgainstFaithfulServer(t *testing.T) {
	if testing.Short() {
		t.Skip("serves the simulator over HTTP for seconds")
	}
	// two fixed-length runs, each on a server of its own: side by side
	t.Parallel()
	t.Run("planned", func(t *testing.T) {
		t.Parallel()
		planned := driftRun(t, 0.5)
		if d := planned.Drift.PromptMean; d < -result.DefaultPromptDriftLimit || d > result.DefaultPromptDriftLimit {
			t.Errorf("with the reasoning share planned: mean prompt drift %.3f, want within ±%.2f", d, result.DefaultPromptDriftLimit)
		}
		if s := planned.Drift.ReasoningShare; s < 0.45 || s > 0.55 {
			t.Errorf("measured reasoning share %.3f, the stand-in streams half of every reply", s)
		}
		t.Logf("prompt drift with the reasoning share planned: %.3f", planned.Drift.PromptMean)
	})
	t.Run("unplanned", func(t *testing.T) {
		t.Parallel()
		unplanned := driftRun(t, 0)
		if d := unplanned.Drift.PromptMean; d > -result.DefaultPromptDriftLimit {
			t.Errorf("without the reasoning share: mean prompt drift %.3f, want below −%.2f (the drift the history handling removes)", d, result.DefaultPromptDriftLimit)
		}
		t.Logf("prompt drift without the reasoning share: %.3f", unplanned.Drift.PromptMean)
	})
}
