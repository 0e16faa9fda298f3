package plan

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/spoc-project/spoc/capacity"
	"github.com/spoc-project/spoc/internal/atomicfile"
	"github.com/spoc-project/spoc/result"
	"github.com/spoc-project/spoc/sim"
)

// RunsManifest is the file in a multi plan's output folder that lists the
// live runs its correction was fitted to: spoc sim calibrate --records
// reads it to fit the same correction by hand.
const RunsManifest = "runs.json"

// FitRun is one live run of RunsManifest: its records file (relative to
// the manifest's folder), the engine flags over the configured ones, and
// the load it ran.
type FitRun struct {
	Records         string         `json:"records"`
	Params          map[string]any `json:"params"`
	Users           int            `json:"users"`
	RampSeconds     float64        `json:"ramp_seconds"`
	WarmupSeconds   float64        `json:"warmup_seconds"`
	DurationSeconds float64        `json:"duration_seconds"`
	ThinkTimeScale  float64        `json:"think_time_scale"`
	// WindowStart and WindowEnd are the run's measured window (its records
	// file holds the warm-up too): the summary the fit compares is taken
	// over it, as the run's own was.
	WindowStart time.Time `json:"window_start"`
	WindowEnd   time.Time `json:"window_end"`
	// HeldBack marks the run the first fit leaves out to measure its error.
	HeldBack bool `json:"held_back,omitempty"`
}

func seconds(v float64) time.Duration { return time.Duration(v * float64(time.Second)) }

// writeManifest writes the multi plan's live runs to dir/RunsManifest.
func (m *multiState) writeManifest(dir string) error {
	runs := make([]FitRun, len(m.runs))
	for i, r := range m.runs {
		runs[i] = FitRun{Records: r.records, Params: r.params, Users: r.load.Users, RampSeconds: r.load.Ramp.Seconds(),
			WarmupSeconds: r.load.Warmup.Seconds(), DurationSeconds: r.load.Duration.Seconds(), ThinkTimeScale: r.load.ThinkTimeScale,
			WindowStart: r.window.Start, WindowEnd: r.window.End, HeldBack: i == m.heldBack}
	}
	f, err := atomicfile.Create(filepath.Join(dir, RunsManifest))
	if err != nil {
		return err
	}
	enc := json.NewEncoder(f)
	enc.SetIndent("", "  ")
	if err := enc.Encode(runs); err != nil {
		f.Abort()
		return err
	}
	return f.Close()
}

// readManifest reads dir/RunsManifest; errors name the file and the run.
func readManifest(dir string) ([]FitRun, error) {
	path := filepath.Join(dir, RunsManifest)
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read the runs of %s: %w (a multi plan's output folder has one)", dir, err)
	}
	var runs []FitRun
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&runs); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(runs) == 0 {
		return nil, fmt.Errorf("%s lists no run", path)
	}
	for i, r := range runs {
		if r.Users < 1 || r.DurationSeconds <= 0 || r.Records == "" {
			return nil, fmt.Errorf("%s: run %d: needs records, users ≥ 1 and a positive duration_seconds", path, i+1)
		}
		if r.WindowStart.IsZero() || !r.WindowEnd.After(r.WindowStart) {
			return nil, fmt.Errorf("%s: run %d: needs its measured window (window_start before window_end); a manifest written before spoc recorded it cannot be refitted, run the plan again", path, i+1)
		}
	}
	return runs, nil
}

// liveLatencies summarises one records file over its measured window
// against sla.
func liveLatencies(path string, sla result.SLA, w result.Window) (Latencies, error) {
	f, err := os.Open(path)
	if err != nil {
		return Latencies{}, err
	}
	defer f.Close()
	sum := result.NewSummary(sla, w)
	n := 0
	if _, err := result.ReadAll(f, path, func(r *result.Record) error { n++; return sum.Write(r) }); err != nil {
		return Latencies{}, err
	}
	if n == 0 {
		return Latencies{}, fmt.Errorf("%s holds no records", path)
	}
	return latenciesOf(sum.Result()), nil
}

// CorrectionFit is what spoc sim calibrate --records writes: the
// correction (the member engine.sim.correction reads), the fit's error and
// where it came from.
type CorrectionFit struct {
	Correction sim.Correction `json:"correction"`
	Fit        FitReport      `json:"fit"`
	Runs       int            `json:"runs"`
	Source     string         `json:"source"`
	Deployment string         `json:"deployment"`
}

// CalibrateRecords fits the simulator's correction for s's deployment to
// the live runs listed in dir/RunsManifest, as the calibrate phase of a
// multi plan does: first without the held-back run, to report the error on
// a run the fit did not see, then to every run. The runs are replayed in
// the simulator with the workload, SLA and windows of s.
func CalibrateRecords(ctx context.Context, s Setup, dir string, o Options) (*CorrectionFit, error) {
	runs, err := readManifest(dir)
	if err != nil {
		return nil, err
	}
	p := &planner{s: s, o: o, sum: &Summary{Fidelity: &FidelityReport{}}}
	if err := p.initMulti(); err != nil {
		return nil, err
	}
	for i, r := range runs {
		path := r.Records
		if !filepath.IsAbs(path) {
			path = filepath.Join(dir, path)
		}
		live, err := liveLatencies(path, s.SLA, result.Window{Start: r.WindowStart, End: r.WindowEnd})
		if err != nil {
			return nil, fmt.Errorf("run %d: %w", i+1, err)
		}
		if live.Settling {
			progressf(o.Progress, "calibrate: run %d (%s, %d users) was still settling when its measured window opened: it calibrates the simulator to a start-up transient as well (a longer warm-up fixes it)", i+1, r.Records, r.Users)
		}
		load := capacity.Load{Users: r.Users, Ramp: seconds(r.RampSeconds), Warmup: seconds(r.WarmupSeconds), Duration: seconds(r.DurationSeconds), ThinkTimeScale: r.ThinkTimeScale}
		if r.HeldBack {
			p.m.heldBack = i
		}
		p.m.runs = append(p.m.runs, liveRun{params: r.Params, load: load, live: live, records: r.Records, window: result.Window{Start: r.WindowStart, End: r.WindowEnd}})
	}
	if _, err := p.calibrate(ctx); err != nil {
		return nil, err
	}
	rep := p.sum.Fidelity
	if rep.Correction == nil || rep.Fit == nil {
		return nil, errors.New("calibrate: no correction fitted")
	}
	d := s.Deployment
	return &CorrectionFit{Correction: *rep.Correction, Fit: *rep.Fit, Runs: len(runs), Source: "live records in " + dir,
		Deployment: fmt.Sprintf("%s on %d× %s (TP %d), as configured", d.Model, d.GPUs, d.GPU, d.TensorParallelSize)}, nil
}

// WriteCorrectionFit writes fit as the JSON a config's
// engine.sim.correction names.
func WriteCorrectionFit(w io.Writer, fit *CorrectionFit) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(fit)
}
