package capacity

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/spoc-project/spoc/config"
	"github.com/spoc-project/spoc/perfmodel"
	"github.com/spoc-project/spoc/report"
	"github.com/spoc-project/spoc/sim"
	"github.com/spoc-project/spoc/trace"
	"github.com/spoc-project/spoc/trace/nsys"
	"github.com/spoc-project/spoc/trace/roofline"
)

// readTrace reads the configured nsys SQLite export or stats CSV.
func readTrace(ctx context.Context, t config.Trace) (*trace.Profile, error) {
	var opt nsys.Options
	if t.Window != "" {
		a, b, _ := strings.Cut(t.Window, ":")
		w, err := trace.ParseWindow(a + "s:" + b + "s")
		if err != nil {
			return nil, fmt.Errorf("trace.window: %w", err)
		}
		opt.Window = w
	}
	opt.NVTX = t.NVTX
	return nsys.ReadFile(ctx, t.File, opt)
}

func (p *planner) trace(ctx context.Context) (string, error) {
	t := p.cfg.Trace
	if t.File == "" {
		p.data.Notes = append(p.data.Notes, "No kernel trace configured (trace.file): the kernel breakdown was not collected. `spoc trace recipe` prints how to capture one.")
		return "no trace configured", nil
	}
	prof, err := readTrace(ctx, t)
	if err != nil {
		return "", err
	}
	rules := trace.DefaultRules()
	if t.Rules != "" {
		f, err := os.Open(t.Rules)
		if err != nil {
			return "", fmt.Errorf("trace.rules: %w", err)
		}
		rules, err = trace.ParseRules(f, t.Rules)
		f.Close()
		if err != nil {
			return "", err
		}
	}
	b, err := trace.Analyze(prof, rules, trace.Options{TopKernels: trace.DefaultTopKernels})
	if err != nil {
		return "", err
	}
	k := &report.Kernels{File: t.File, Breakdown: b, Mix: p.batchMix()}
	dep, err := p.ev.Deployment(p.data.Capacity.Config)
	if err == nil {
		preds, perr := roofline.Predict(dep.Model, dep.GPU, perfmodel.SystemOptions{TensorParallel: dep.TensorParallelSize, CUDAGraphs: true}, k.Mix, nil)
		if perr == nil {
			k.Roofline, perr = roofline.Compare(b, preds)
		}
		if perr != nil {
			p.data.Notes = append(p.data.Notes, "Roofline comparison not available: "+perr.Error())
		}
	}
	p.data.Kernels = k
	return fmt.Sprintf("%d GPUs, %s", len(b.GPUs), topCategory(b)), nil
}

func topCategory(b *trace.Breakdown) string {
	best := trace.CategoryTime{}
	for _, c := range b.Categories {
		if c.TimeNS > best.TimeNS {
			best = c
		}
	}
	return fmt.Sprintf("largest category %s (%.0f%%)", best.Name, 100*best.Share)
}

// batchMix is the steady-state step at the ceiling: the mean running
// sequences per replica decoding over the mean prompt length, and one
// prefill chunk of the batched-token budget.
func (p *planner) batchMix() roofline.BatchMix {
	mix := roofline.BatchMix{DecodeSeqs: 64, DecodeContext: 20000, PrefillTokens: 2048}
	replicas := max(p.cfg.Engine.GPUs/max(p.cfg.Engine.TensorParallelSize, 1), 1)
	if s := p.data.Telemetry; s != nil && s.Engine.Running.Mean > 0 {
		mix.DecodeSeqs = max(int(s.Engine.Running.Mean/float64(replicas)+0.5), 1)
	}
	if w := p.data.Workload; w != nil && w.Requests > 0 {
		mix.DecodeContext = int(w.Prefix.PromptTokens / int64(w.Requests))
	}
	if dep, err := p.ev.Deployment(p.data.Capacity.Config); err == nil {
		mix.PrefillTokens = dep.Params.MaxNumBatchedTokens
	}
	mix.PrefillContext = mix.DecodeContext
	return mix
}

func (p *planner) compare(ctx context.Context) (string, error) {
	if !p.o.Compare && len(p.cfg.Engine.Compare) == 0 {
		return "not requested", nil
	}
	targets := p.cfg.Engine.Compare
	if len(targets) == 0 {
		targets = []config.Target{
			{Name: "4x H100", GPU: "H100-SXM", GPUs: 4, TensorParallelSize: 4},
			{Name: "2x H200", GPU: "H200-SXM", GPUs: 2, TensorParallelSize: 2},
		}
	}
	var parts []string
	for _, t := range targets {
		cfg := *p.cfg
		cfg.Engine.GPU, cfg.Engine.GPUs, cfg.Engine.TensorParallelSize = t.GPU, t.GPUs, t.TensorParallelSize
		ev, err := NewEvaluator(&cfg, nil, p.o.Logger)
		if err != nil {
			return "", err
		}
		p.logf("   target %s (%d× %s, TP %d)", t.Name, t.GPUs, t.GPU, t.TensorParallelSize)
		res, err := SweepConfig(ctx, ev, p.data.Capacity.Config, func(u int) Load { return SweepLoad(&cfg, u) }, SweepOptionsFrom(&cfg), nil)
		if err != nil {
			return "", fmt.Errorf("target %s: %w", t.Name, err)
		}
		row := report.CompareRow{Name: t.Name, GPU: t.GPU, GPUs: t.GPUs, TensorParallelSize: t.TensorParallelSize,
			Users: res.Ceiling, FirstFailingUsers: res.FirstFailing, FailedClause: res.FailedClause,
			UsersPerGPU: float64(res.Ceiling) / float64(t.GPUs)}
		if len(p.data.Compare) > 0 && p.data.Compare[0].Users > 0 {
			row.Ratio = float64(res.Ceiling) / float64(p.data.Compare[0].Users)
		} else if len(p.data.Compare) == 0 {
			row.Ratio = 1
		}
		p.data.Compare = append(p.data.Compare, row)
		p.logf("   target %s: ceiling %d users (%.1f per GPU), first failing %d: %s", t.Name, res.Ceiling, row.UsersPerGPU, res.FirstFailing, res.FailedClause)
		parts = append(parts, fmt.Sprintf("%s %d users", t.Name, res.Ceiling))
	}
	if n := len(p.data.Compare); n >= 2 && p.data.Compare[n-1].Users > 0 {
		parts = append(parts, fmt.Sprintf("ratio %s/%s = %.2f", p.data.Compare[0].Name, p.data.Compare[n-1].Name,
			float64(p.data.Compare[0].Users)/float64(p.data.Compare[n-1].Users)))
	}
	return strings.Join(parts, ", "), nil
}

// simCalibration names the cost-model factors the simulator uses and their
// validation error, so a reader knows how far to trust simulated numbers.
func simCalibration(cfg *config.Config) string {
	if cfg.Engine.Sim.Calibration != "" {
		return "calibration file " + cfg.Engine.Sim.Calibration
	}
	dep, err := sim.NewDeployment(cfg.Engine.SimDeployment())
	if err != nil {
		return "unknown (" + err.Error() + ")"
	}
	c, ok := perfmodel.CalibrationFor(dep.Model)
	if !ok {
		return "uncalibrated first-principles factors (no measurements for " + dep.Model.Name + ")"
	}
	keys := make([]string, 0, len(c.MAPE))
	for k := range c.MAPE {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	errs := make([]string, len(keys))
	for i, k := range keys {
		errs[i] = fmt.Sprintf("%s %.1f%%", k, c.MAPE[k])
	}
	return fmt.Sprintf("built-in %s calibration (%s, fitted %s on %s); validation MAPE: %s",
		c.Family, c.Engine, c.Date, c.Source, strings.Join(errs, ", "))
}
