package plan

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spoc-project/spoc/perfmodel"
	"github.com/spoc-project/spoc/sim"
	"github.com/spoc-project/spoc/trace"
	"github.com/spoc-project/spoc/trace/nsys"
	"github.com/spoc-project/spoc/trace/roofline"
)

// readTrace reads the configured nsys SQLite export or stats CSV.
func readTrace(ctx context.Context, t Trace) (*trace.Profile, error) {
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
	t := p.s.Trace
	if t.File == "" {
		p.sum.Notes = append(p.sum.Notes, "No kernel trace configured (trace.file): the kernel breakdown was not collected. `spoc trace recipe` prints how to capture one.")
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
	k := &Kernels{File: t.File, Breakdown: b, Mix: p.batchMix()}
	if len(k.Mix.Assumed) > 0 {
		p.sum.Notes = append(p.sum.Notes, fmt.Sprintf("The roofline comparison prices a batch whose %s were assumed, not measured (no engine telemetry or workload inspection at the ceiling): %d decoding sequences over %d cached tokens, a prefill chunk of %d tokens.",
			strings.Join(k.Mix.Assumed, ", "), k.Mix.DecodeSeqs, k.Mix.DecodeContext, k.Mix.PrefillTokens))
	}
	dep, err := p.ev.Deployment(p.sum.Capacity.Config)
	if err == nil {
		preds, perr := roofline.Predict(dep.Model, dep.GPU, perfmodel.SystemOptions{TensorParallel: dep.TensorParallelSize, CUDAGraphs: true}, k.Mix, nil)
		if perr == nil {
			k.Roofline, perr = roofline.Compare(b, preds)
		}
		if perr != nil {
			p.sum.Notes = append(p.sum.Notes, "Roofline comparison not available: "+perr.Error())
		}
	}
	p.sum.Kernels = k
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
// prefill chunk of the batched-token budget. What the plan did not measure
// (no engine telemetry, no workload inspection, no resolved flags) takes
// the values below and is named in Assumed.
func (p *planner) batchMix() roofline.BatchMix {
	mix := roofline.BatchMix{DecodeSeqs: 64, DecodeContext: 20000, PrefillTokens: 2048}
	replicas := p.s.Deployment.Replicas()
	if s := p.sum.Telemetry; s != nil && s.Engine.Running.Mean > 0 {
		mix.DecodeSeqs = max(int(s.Engine.Running.Mean/float64(replicas)+0.5), 1)
	} else {
		mix.Assumed = append(mix.Assumed, "decode_seqs")
	}
	if w := p.sum.Workload; w != nil && w.Requests > 0 {
		mix.DecodeContext = int(w.Prefix.PromptTokens / int64(w.Requests))
	} else {
		mix.Assumed = append(mix.Assumed, "decode_context", "prefill_context")
	}
	if dep, err := p.deployment(); err == nil {
		mix.PrefillTokens = dep.Params.MaxNumBatchedTokens
	} else {
		mix.Assumed = append(mix.Assumed, "prefill_tokens")
	}
	mix.PrefillContext = mix.DecodeContext
	return mix
}

// deployment is the simulated deployment of the chosen configuration.
func (p *planner) deployment() (sim.Deployment, error) {
	if p.ev == nil {
		return sim.Deployment{}, errors.New("no evaluator")
	}
	return p.ev.Deployment(p.sum.Capacity.Config)
}
