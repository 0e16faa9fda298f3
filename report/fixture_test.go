package report_test

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spoc-project/spoc/capacity"
	"github.com/spoc-project/spoc/config"
	"github.com/spoc-project/spoc/perfmodel"
	"github.com/spoc-project/spoc/plan"
	"github.com/spoc-project/spoc/search"
	"github.com/spoc-project/spoc/telemetry"
	"github.com/spoc-project/spoc/trace"
	"github.com/spoc-project/spoc/trace/roofline"
)

// fixture loads testdata/plan.json — the summary.json of the default plan
// (spoc plan --compare, every telemetry series thinned to one point in five)
// — and fills what that plan could not collect, so that every section is
// drawn: the kernel breakdown of the trace/nsys golden fixture with its
// roofline predictions, one straggler stretch, and the hypervolume of the
// study's trials per generation.
func fixture(t testing.TB) *plan.Summary {
	t.Helper()
	raw, err := os.ReadFile("testdata/plan.json")
	if err != nil {
		t.Fatal(err)
	}
	var d plan.Summary
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatalf("testdata/plan.json: %v", err)
	}
	addKernels(t, &d)
	addStraggler(&d)
	addHypervolume(t, &d)
	return &d
}

// addKernels attaches the trace/nsys golden breakdown and its roofline
// comparison, priced as spoc plan prices it.
func addKernels(t testing.TB, d *plan.Summary) {
	t.Helper()
	raw, err := os.ReadFile("testdata/breakdown.json")
	if err != nil {
		t.Fatal(err)
	}
	var b trace.Breakdown
	if err := json.Unmarshal(raw, &b); err != nil {
		t.Fatalf("testdata/breakdown.json: %v", err)
	}
	setup, err := config.Default().Setup(config.SetupOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ev, err := capacity.NewEvaluator(setup.Setup, nil)
	if err != nil {
		t.Fatal(err)
	}
	dep, err := ev.Deployment(d.Capacity.Config)
	if err != nil {
		t.Fatalf("deployment of the chosen configuration: %v", err)
	}
	mix := roofline.BatchMix{DecodeSeqs: 64, DecodeContext: 20000, PrefillTokens: dep.Params.MaxNumBatchedTokens}
	if d.Telemetry != nil && d.Telemetry.Engine.Running.Mean > 0 {
		mix.DecodeSeqs = int(d.Telemetry.Engine.Running.Mean + 0.5)
	}
	if w := d.Workload; w != nil && w.Requests > 0 {
		mix.DecodeContext = int(w.Prefix.PromptTokens / int64(w.Requests))
	}
	mix.PrefillContext = mix.DecodeContext
	preds, err := roofline.Predict(dep.Model, dep.GPU, perfmodel.SystemOptions{TensorParallel: dep.TensorParallelSize, CUDAGraphs: true}, mix, nil)
	if err != nil {
		t.Fatal(err)
	}
	cmp, err := roofline.Compare(&b, preds)
	if err != nil {
		t.Fatal(err)
	}
	d.Kernels = &plan.Kernels{File: "gpt-oss-120b-tp4.sqlite", Breakdown: &b, Mix: mix, Roofline: cmp}
	var notes []string
	for _, n := range d.Notes {
		if !strings.Contains(n, "trace") {
			notes = append(notes, n)
		}
	}
	d.Notes = notes
}

// addStraggler flags GPU 2 for half a minute of the window, with its clock
// and temperature series bent to match.
func addStraggler(d *plan.Summary) {
	s := d.Telemetry
	if s == nil || len(s.GPUs) < 3 {
		return
	}
	g := s.GPUs[2]
	st := telemetry.Straggler{Target: g.Target, Host: g.Host, GPU: g.GPU, UUID: g.UUID,
		Start: s.Start.Add(40 * time.Second), End: s.Start.Add(70 * time.Second), Samples: 30,
		Reasons: []string{"sm_clock_below_peers", "hw_thermal_slowdown"}, ClockMHz: 1410, PeerMedianMHz: 1980, MinClockRatio: 0.69}
	s.Stragglers = append(s.Stragglers, st)
	for i, c := range s.Charts {
		if c.GPU != st.Name() {
			continue
		}
		for j, p := range c.Points {
			if p.T.Before(st.Start) || p.T.After(st.End) {
				continue
			}
			switch c.Signal {
			case "sm_clock":
				s.Charts[i].Points[j].V = st.ClockMHz
			case "temperature":
				s.Charts[i].Points[j].V = 88
			}
		}
	}
}

// addHypervolume computes the hypervolume of the trials up to each
// generation, in the normalised minimised space with reference 1.1.
func addHypervolume(t testing.TB, d *plan.Summary) {
	t.Helper()
	s := d.Search
	if s == nil || len(s.Hypervolume) > 0 {
		return
	}
	k := len(s.Objectives)
	lo, hi := make([]float64, k), make([]float64, k)
	for i := range lo {
		lo[i], hi[i] = math.Inf(1), math.Inf(-1)
	}
	oriented := func(m plan.Member) []float64 {
		p := make([]float64, k)
		for i, o := range s.Objectives {
			p[i] = m.Values[i]
			if strings.HasPrefix(o.Direction, "max") {
				p[i] = -p[i]
			}
		}
		return p
	}
	last := 0
	for _, m := range s.Trials {
		if len(m.Values) != k {
			continue
		}
		for i, v := range oriented(m) {
			lo[i], hi[i] = math.Min(lo[i], v), math.Max(hi[i], v)
		}
		last = max(last, m.Generation)
	}
	ref := make([]float64, k)
	for i := range ref {
		ref[i] = 1.1
	}
	for g := 0; g <= last; g++ {
		var pts [][]float64
		for _, m := range s.Trials {
			if len(m.Values) != k || m.Generation > g {
				continue
			}
			p := oriented(m)
			for i := range p {
				p[i] = (p[i] - lo[i]) / math.Max(hi[i]-lo[i], 1e-12)
			}
			pts = append(pts, p)
		}
		hv, err := search.Hypervolume(pts, ref)
		if err != nil {
			t.Fatal(err)
		}
		s.Hypervolume = append(s.Hypervolume, plan.GenerationHV{Generation: g, Trials: len(pts), Hypervolume: hv})
	}
}

var quickPlan struct {
	once sync.Once
	d    *plan.Summary
	err  error
	took time.Duration
}

// quickPlanData runs the default plan with --quick in-process (the
// simulator in virtual time, about 6 s on a 2-core machine), once per test
// binary.
func quickPlanData(t testing.TB) *plan.Summary {
	t.Helper()
	quickPlan.once.Do(func() {
		dir, err := os.MkdirTemp("", "spoc-report-plan-")
		if err != nil {
			quickPlan.err = err
			return
		}
		defer os.RemoveAll(dir)
		start := time.Now()
		setup, err := config.Default().Setup(config.SetupOptions{OutDir: dir, Quick: true, Compare: true})
		if err != nil {
			quickPlan.err = err
			return
		}
		quickPlan.d, quickPlan.err = plan.Run(context.Background(), setup, plan.Options{Version: "test"})
		quickPlan.took = time.Since(start)
	})
	if quickPlan.err != nil {
		t.Fatalf("quick plan: %v", quickPlan.err)
	}
	t.Logf("quick plan took %s", quickPlan.took.Round(time.Millisecond))
	return quickPlan.d
}
