package sim

import (
	"context"
	"testing"
	"time"

	"github.com/spoc-project/spoc/perfmodel"
	"github.com/spoc-project/spoc/result"
	"github.com/spoc-project/spoc/workload"
)

// Properties of the simulator on the reference workload (issue 4,
// "Acceptance"). Run with -v to see the numbers; docs/simulator.md quotes
// them.

func defaultSource(t testing.TB) workload.Source {
	t.Helper()
	src, err := workload.New(workload.DefaultSpec(), ReferenceDeploymentSpec().MaxModelLen)
	if err != nil {
		t.Fatal(err)
	}
	return src
}

type propRun struct {
	st               *RunStats
	meanTTFT, itlP95 time.Duration
	ok               int64
}

func runProp(t *testing.T, users int, mod func(*Deployment)) propRun {
	t.Helper()
	d := referenceDeployment(t)
	if mod != nil {
		mod(&d)
	}
	o := Options{Deployment: d, Users: users, Ramp: time.Minute, Warmup: time.Minute, Duration: propDuration, ThinkTimeScale: 1}
	epoch := time.Unix(0, 0).UTC()
	sum := result.NewSummary(result.DefaultSLA(), result.Window{Start: epoch.Add(o.Warmup), End: epoch.Add(o.Warmup + o.Duration)})
	var ttftSum time.Duration
	var n int64
	st, err := RunVirtual(context.Background(), o, defaultSource(t), result.SinkFunc(func(r *result.Record) error {
		if !r.Warmup && r.Status == result.StatusOK {
			ttft, _ := r.TTFT()
			ttftSum += ttft
			n++
		}
		return sum.Write(r)
	}))
	if err != nil {
		t.Fatal(err)
	}
	res := sum.Result()
	if n == 0 {
		t.Fatal("no request completed in the window")
	}
	return propRun{st: st, meanTTFT: ttftSum / time.Duration(n), itlP95: time.Duration(res.Overall.ITL.P95 * 1e6), ok: n}
}

func TestPropertyBatchedTokenBudget(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the reference workload twice")
	}
	// 200 users keep prefill chunks in most steps (prefill-heavy); at light
	// load few steps carry a chunk and the effect on ITL p95 vanishes.
	small := runProp(t, 200, func(d *Deployment) { d.Params.MaxNumBatchedTokens = 2048 })
	large := runProp(t, 200, func(d *Deployment) { d.Params.MaxNumBatchedTokens = 8192 })
	t.Logf("200 users: budget 2048: mean TTFT %v, ITL p95 %v; budget 8192: mean TTFT %v, ITL p95 %v",
		small.meanTTFT, small.itlP95, large.meanTTFT, large.itlP95)
	if large.meanTTFT >= small.meanTTFT {
		t.Errorf("a larger budget should lower mean TTFT: %v (8192) >= %v (2048)", large.meanTTFT, small.meanTTFT)
	}
	if large.itlP95 <= small.itlP95 {
		t.Errorf("a larger budget should raise ITL p95: %v (8192) <= %v (2048)", large.itlP95, small.itlP95)
	}
}

func TestPropertyPrefixCachingKeepsKVUsageLow(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the reference workload twice")
	}
	// 150 users is a load the simulated deployment sustains (sub-second mean
	// TTFT); docs/simulator.md reports 300 users too, beyond its ceiling.
	with := runProp(t, 150, nil)
	without := runProp(t, 150, func(d *Deployment) { d.Params.EnablePrefixCaching = false })
	t.Logf("150 users: KV usage with prefix caching mean %.1f%% peak %.1f%% (hit rate %.1f%%); without mean %.1f%% peak %.1f%%",
		100*with.st.MeanKVUsage, 100*with.st.PeakKVUsage, 100*float64(with.st.Engine.PrefixHits)/float64(with.st.Engine.PrefixQueries),
		100*without.st.MeanKVUsage, 100*without.st.PeakKVUsage)
	if with.st.MeanKVUsage >= 0.3 {
		t.Errorf("KV usage with prefix caching %.1f%%, want well below 50%%", 100*with.st.MeanKVUsage)
	}
	if without.st.MeanKVUsage < 1.5*with.st.MeanKVUsage {
		t.Errorf("KV usage without prefix caching %.1f%% is not clearly higher than with %.1f%%", 100*without.st.MeanKVUsage, 100*with.st.MeanKVUsage)
	}
}

func TestPropertyAttentionDominatesAtLargeBatch(t *testing.T) {
	c, err := referenceDeployment(t).Build()
	if err != nil {
		t.Fatal(err)
	}
	// A large mixed batch at the reference contexts: 200 decodes over 20k–100k
	// contexts and a 2k prefill chunk of a long prompt.
	var batch []perfmodel.Seq
	for i := range 200 {
		batch = append(batch, perfmodel.Seq{NewTokens: 1, ContextTokens: 20000 + 400*i})
	}
	batch = append(batch, perfmodel.Seq{NewTokens: 2048, ContextTokens: 60000})
	cost := c.system.Step(batch)
	name, _ := cost.Terms.Largest()
	t.Logf("large batch: %.1f ms, terms %+v, bottleneck %s", cost.Seconds*1e3, cost.Terms, cost.Bottleneck())
	if name != "attention" {
		t.Errorf("largest term at large batch is %s, want attention (%+v)", name, cost.Terms)
	}
}

func TestPropertyMoreHardwareNeverSlower(t *testing.T) {
	batches := [][]perfmodel.Seq{
		{{NewTokens: 8192, ContextTokens: 0}},
		{{NewTokens: 2048, ContextTokens: 100000}},
	}
	var decode []perfmodel.Seq
	for i := range 256 {
		decode = append(decode, perfmodel.Seq{NewTokens: 1, ContextTokens: 1000 + 300*i})
	}
	batches = append(batches, decode, append(decode[:128:128], perfmodel.Seq{NewTokens: 4096, ContextTokens: 30000}))
	step := func(gpu string, tp int) func([]perfmodel.Seq) float64 {
		d := referenceDeployment(t)
		g, err := perfmodel.LookupGPU(gpu)
		if err != nil {
			t.Fatal(err)
		}
		d.GPU, d.GPUs, d.TensorParallelSize = g, tp, tp
		c, err := d.Build()
		if err != nil {
			t.Fatal(err)
		}
		return func(b []perfmodel.Seq) float64 { return c.system.Step(b).Seconds }
	}
	h100tp2, h100tp4, h100tp8, h200tp4 := step("H100-SXM", 2), step("H100-SXM", 4), step("H100-SXM", 8), step("H200-SXM", 4)
	for i, b := range batches {
		if a, b4, b8 := h100tp2(b), h100tp4(b), h100tp8(b); b4 > a || b8 > b4 {
			t.Errorf("batch %d: more GPUs raised step time: TP2 %.2f ms, TP4 %.2f ms, TP8 %.2f ms", i, a*1e3, b4*1e3, b8*1e3)
		}
		if a, h := h100tp4(b), h200tp4(b); h > a {
			t.Errorf("batch %d: more bandwidth (H200) raised step time: %.2f ms > %.2f ms", i, h*1e3, a*1e3)
		}
	}
}

// propDuration is the measured window of property runs: the reference run
// length, long enough for sessions to reach their steady-state contexts.
var propDuration = 10 * time.Minute
