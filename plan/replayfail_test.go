package plan_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spoc-project/spoc/capacity"
	"github.com/spoc-project/spoc/config"
	"github.com/spoc-project/spoc/internal/atomicfile"
	"github.com/spoc-project/spoc/plan"
)

// TestFailedReplayLeavesFitErrorsAbsent fits a correction to runs one of
// which the simulator cannot replay (flags it rejects): the errors it
// could not compute are absent, with the reason, never 0 (a perfect fit).
func TestFailedReplayLeavesFitErrorsAbsent(t *testing.T) {
	if testing.Short() {
		t.Skip("fits a correction to simulated runs (seconds)")
	}
	s := foreignSetup(t, func(c *config.Config) {})
	ev, err := capacity.NewEvaluator(s.Setup, nil)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	load := s.Windows.Sweep.At(20)
	w, err := atomicfile.Create(filepath.Join(dir, "run-1.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	e, err := ev.Evaluate(context.Background(), map[string]any{}, load, capacity.Outputs{Records: w})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	run := plan.FitRun{Records: "run-1.jsonl", Params: map[string]any{}, Users: 20, RampSeconds: load.Ramp.Seconds(),
		WarmupSeconds: load.Warmup.Seconds(), DurationSeconds: load.Duration.Seconds(), ThinkTimeScale: load.ThinkTimeScale,
		WindowStart: e.Summary.Window.Start, WindowEnd: e.Summary.Window.End}
	bad := run
	bad.Params, bad.HeldBack = map[string]any{"tensor-parallel-size": 3}, true
	b, _ := json.Marshal([]plan.FitRun{run, bad})
	if err := os.WriteFile(filepath.Join(dir, plan.RunsManifest), b, 0o644); err != nil {
		t.Fatal(err)
	}
	fit, err := plan.CalibrateRecords(context.Background(), s, dir, plan.Options{})
	if err != nil {
		t.Fatalf("calibrate: %v", err)
	}
	f := fit.Fit
	if f.HeldBackError != nil {
		t.Errorf("held-back error %.3f for a run the simulator could not replay, want absent", *f.HeldBackError)
	}
	if !strings.Contains(f.ErrorsAbsent, "could not replay run 2") {
		t.Errorf("errors_absent %q does not say which replay failed", f.ErrorsAbsent)
	}
	if f.UncalibratedError == nil || f.FittedError == nil {
		t.Errorf("the errors on the run that replays are absent too: %s", f.ErrorsAbsent)
	}
	var b2 bytes.Buffer
	if err := plan.WriteCorrectionFit(&b2, fit); err != nil {
		t.Fatalf("write the fit: %v", err)
	}
	if !strings.Contains(b2.String(), `"errors_absent"`) {
		t.Errorf("the written fit has no errors_absent:\n%s", b2.String())
	}
}
