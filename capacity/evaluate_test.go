package capacity

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/spoc-project/spoc/config"
	"github.com/spoc-project/spoc/engine"
)

func quickConfig() *config.Config {
	cfg := config.Default()
	cfg.Run.Ramp = config.Duration(10 * time.Second)
	cfg.Run.Warmup = config.Duration(30 * time.Second)
	cfg.Run.Duration = config.Duration(60 * time.Second)
	return cfg
}

func TestEvaluateVirtualAccountsEveryRequest(t *testing.T) {
	cfg := quickConfig()
	ev, err := NewEvaluator(cfg, simLauncher(t, cfg), nil)
	if err != nil {
		t.Fatal(err)
	}
	var recs bytes.Buffer
	got, err := ev.Evaluate(context.Background(), map[string]any{"max-num-batched-tokens": 2048}, RunLoad(cfg, 40), Outputs{Records: &recs})
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
	if got.Signals.Engine.KVCacheUsage.Samples == 0 || len(got.Signals.GPUs) != cfg.Engine.GPUs {
		t.Errorf("telemetry not derived from the simulator: %+v GPUs=%d", got.Signals.Engine.KVCacheUsage, len(got.Signals.GPUs))
	}
	if got.Pass != got.Summary.SLA.Pass || (!got.Pass && got.Failed == "") {
		t.Errorf("verdict inconsistent: pass %v failed %q", got.Pass, got.Failed)
	}
}

func TestEvaluateInfeasibleParams(t *testing.T) {
	cfg := quickConfig()
	ev, err := NewEvaluator(cfg, simLauncher(t, cfg), nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = ev.Evaluate(context.Background(), map[string]any{"gpu-memory-utilization": 0.05}, RunLoad(cfg, 5), Outputs{})
	if !IsInfeasible(err) {
		t.Fatalf("weights cannot fit in 5 %% of memory: want an infeasible error, got %v", err)
	}
}

func TestEvaluateDeterministic(t *testing.T) {
	cfg := quickConfig()
	ev, err := NewEvaluator(cfg, simLauncher(t, cfg), nil)
	if err != nil {
		t.Fatal(err)
	}
	var a, b bytes.Buffer
	if _, err := ev.Evaluate(context.Background(), nil, RunLoad(cfg, 20), Outputs{Records: &a}); err != nil {
		t.Fatal(err)
	}
	if _, err := ev.Evaluate(context.Background(), nil, RunLoad(cfg, 20), Outputs{Records: &b}); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Error("same config and seed gave different records")
	}
}

// simLauncher is the simulator launcher of cfg's engine section.
func simLauncher(t testing.TB, cfg *config.Config) engine.Launcher {
	t.Helper()
	l, err := engine.NewSimFromConfig(cfg.Engine, engine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// A missing engine is a programming error, never a silent simulator.
func TestNewEvaluatorRefusesMissingEngine(t *testing.T) {
	if _, err := NewEvaluator(quickConfig(), nil, nil); !errors.Is(err, ErrNoEngine) {
		t.Fatalf("NewEvaluator(nil engine) = %v, want ErrNoEngine", err)
	}
}
