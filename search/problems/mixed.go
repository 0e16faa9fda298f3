package problems

import (
	"fmt"
	"math"

	"github.com/spoc-project/spoc/search"
)

// Mixed is a synthetic low-budget problem shaped like an engine-flag search:
// seven parameters of every kind (log int, stepped int, float, log float,
// two categoricals, a bool) and one cross-parameter rule (chunk ≥ batch).
// f1 falls with the log batch size; f2 is a ZDT1-like trade-off scaled by a
// distance g ≥ 1 that every other parameter feeds, so both the numeric and
// the categorical choices matter.
func Mixed() Problem {
	space := search.Space{Params: []search.Param{
		search.IntLog("batch", 1, 1024),
		search.IntStep("chunk", 256, 8192, 256),
		search.Float("util", 0.5, 0.95),
		search.FloatLog("alpha", 1e-3, 1),
		search.Categorical("mode", "fast", "balanced", "safe"),
		search.Bool("cache"),
		search.Categorical("tp", 1, 2, 4, 8),
	}}
	space = space.WithRule("chunk_ge_batch", func(p search.Params) error {
		if p.Int("chunk") < p.Int("batch") {
			return fmt.Errorf("chunk %d < batch %d", p.Int("chunk"), p.Int("batch"))
		}
		return nil
	})
	ref := []float64{1.1, 1.1}
	return Problem{
		Name:        "mixed",
		Description: "mixed: 7 int/float/log/categorical/bool parameters, one rule, 2 objectives",
		Space:       space, Directions: minimize(2), Reference: ref,
		TrueHypervolume: mixedTrueHV(ref),
		Evaluate: func(p search.Params) ([]float64, []float64) {
			f1 := mixedF1(p.Int("batch"))
			g := mixedG(p.Int("chunk"), p.Float("util"), p.Float("alpha"), p.String("mode"), p.Bool("cache"), p.Int("tp"))
			return []float64{f1, g - math.Sqrt(g*f1)}, nil
		},
	}
}

func mixedF1(batch int) float64 { return 1 - math.Log(float64(batch))/math.Log(1024) }

func mixedG(chunk int, util, alpha float64, mode string, cache bool, tp int) float64 {
	c := (float64(chunk) - 256) / (8192 - 256)
	u := (util - 0.5) / 0.45
	a := (math.Log(alpha) - math.Log(1e-3)) / (-math.Log(1e-3))
	g := 1 + 2*((c-0.25)*(c-0.25)+(u-0.8)*(u-0.8)+(a-0.6)*(a-0.6))
	if mode != "balanced" {
		g += 0.4
	}
	if !cache {
		g += 0.3
	}
	g += 0.2 * math.Abs(math.Log2(float64(tp))-2) / 2
	return g
}

// mixedTrueHV is the hypervolume of the best reachable front: g at its
// minimum over the chunk grid (util and alpha are continuous), every batch
// size.
func mixedTrueHV(ref []float64) float64 {
	gMin := math.Inf(1)
	for chunk := 256; chunk <= 8192; chunk += 256 {
		gMin = math.Min(gMin, mixedG(chunk, 0.5+0.8*0.45, math.Exp(math.Log(1e-3)*0.4), "balanced", true, 4))
	}
	pts := make([][]float64, 0, 1024)
	for b := 1; b <= 1024; b++ {
		f1 := mixedF1(b)
		pts = append(pts, []float64{f1, gMin - math.Sqrt(gMin*f1)})
	}
	v, err := search.Hypervolume(pts, ref)
	if err != nil {
		panic(err)
	}
	return v
}
