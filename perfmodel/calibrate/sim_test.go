package calibrate_test

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/spoc-project/spoc/perfmodel"
	"github.com/spoc-project/spoc/perfmodel/calibrate"
	"github.com/spoc-project/spoc/result"
	"github.com/spoc-project/spoc/sim"
	"github.com/spoc-project/spoc/workload"
)

// randomSource gives every request one fresh turn of random length (unique
// keys: no prefix sharing), as the reference benchmark's random dataset does.
type randomSource struct {
	in, out int
	ratio   float64
	seed    uint64
}

func (s randomSource) Session(user, n int) (*workload.Script, error) {
	r := rand.New(rand.NewPCG(s.seed, uint64(user)<<32|uint64(n)))
	draw := func(l int) int { lo := int(s.ratio * float64(l)); return lo + r.IntN(l-lo+1) }
	in, out := draw(s.in), draw(s.out)
	return &workload.Script{User: user, Session: n, Turns: []workload.Turn{{
		NewContent:   []workload.Segment{{Kind: workload.KindTurn, Owner: user, Turn: n, Key: r.Uint64(), Tokens: in}},
		PromptTokens: in, MaxTokens: out, ReplyTokens: out,
	}}}, nil
}

// TestSimAgreesWithReplay runs reference configurations through sim's
// virtual-time engine (the simulator users run) with the built-in factors
// and compares its steady-state medians (20 virtual minutes after a minute of
// warm-up) with the calibration replay of as many requests: the factors
// fitted on the replay must mean the same in sim. Throughput differs a little
// more than the medians because sim counts only requests completed inside
// its window.
func TestSimAgreesWithReplay(t *testing.T) {
	m, _ := perfmodel.LookupModel(calibrate.DefaultModel)
	g, _ := perfmodel.LookupGPU("h100")
	for _, tc := range []struct{ tp, in, out, conc int }{{2, 1024, 1024, 16}, {8, 8192, 1024, 8}, {4, 1024, 8192, 32}} {
		params := sim.DefaultEngineParams()
		params.MaxNumSeqs, params.EnablePrefixCaching, params.AsyncScheduling = tc.conc, false, true
		dep := sim.Deployment{Model: m, GPU: g, GPUs: tc.tp, TensorParallelSize: tc.tp, MaxModelLen: 10240, Params: params}
		var ttft, tpot []float64
		var outTokens int
		window := 20 * time.Minute
		_, err := sim.RunVirtual(context.Background(), sim.Options{Deployment: dep, Users: tc.conc,
			Warmup: time.Minute, Duration: window, SeriesInterval: -1},
			randomSource{in: tc.in, out: tc.out, ratio: 0.8, seed: 1}, result.SinkFunc(func(r *result.Record) error {
				if r.Status != result.StatusOK || r.Warmup {
					return nil
				}
				if d, ok := r.TTFT(); ok {
					ttft = append(ttft, d.Seconds())
				}
				if d, ok := r.TPOT(); ok {
					tpot = append(tpot, d.Seconds())
				}
				outTokens += r.OutputTokens
				return nil
			}))
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(ttft)
		slices.Sort(tpot)
		simM := calibrate.Metrics{OutputThroughputPerGPU: float64(outTokens) / window.Seconds() / float64(tc.tp),
			MedianTTFTSeconds: ttft[len(ttft)/2], MedianTPOTSeconds: tpot[len(tpot)/2]}
		p := calibrate.Point{Source: "sim", Model: calibrate.DefaultModel, GPU: "h100", TensorParallel: tc.tp, GPUs: tc.tp,
			InputLen: tc.in, OutputLen: tc.out, RangeRatio: 0.8, Concurrency: tc.conc, NumPrompts: len(tpot) + tc.conc,
			Server: calibrate.Server{CUDAGraphMaxTokens: 512, MaxModelLen: 10240}, Measured: simM}
		rep, err := calibrate.Replay{Seed: 1}.Predict(context.Background(), p, perfmodel.DefaultFactors(m))
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("TP%d %d/%d c%d: sim %+v (%d requests), replay %+v", tc.tp, tc.in, tc.out, tc.conc, simM, len(tpot), rep)
		for _, n := range calibrate.MetricNames {
			if d := math.Abs(simM.Get(n)-rep.Get(n)) / rep.Get(n); d > 0.10 {
				t.Errorf("TP%d %d/%d c%d: %s sim %.4g vs replay %.4g (%.0f%% apart)", tc.tp, tc.in, tc.out, tc.conc, n, simM.Get(n), rep.Get(n), d*100)
			}
		}
	}
}
