package workload

import (
	"context"
	"fmt"
	"math"
	"slices"

	"github.com/spoc-project/spoc/corpus"
	"github.com/spoc-project/spoc/tokenizer"
)

// Sample summarises one measured quantity and its lognormal fit (median =
// exp(mean ln x), sigma = standard deviation of ln x, over positive values).
type Sample struct {
	N      int     `json:"n"`
	P10    int     `json:"p10"`
	P50    int     `json:"p50"`
	P90    int     `json:"p90"`
	P99    int     `json:"p99"`
	Max    int     `json:"max"`
	Median float64 `json:"lognormal_median"`
	Sigma  float64 `json:"lognormal_sigma"`
}

// Fitted is what Fit learns from measured trajectories.
type Fitted struct {
	Trajectories int `json:"trajectories"`
	Calls        int `json:"calls"`
	// ContextStart is the context of each trajectory's first call.
	ContextStart Sample `json:"context_start"`
	// ContextMax is the largest context of each trajectory.
	ContextMax Sample `json:"context_max"`
	// Turns is the number of calls per trajectory.
	Turns Sample `json:"turns"`
	// Growth is the new content between consecutive calls (tool results,
	// user messages), OutputTokens the output of each call.
	Growth       Sample `json:"growth"`
	OutputTokens Sample `json:"output_tokens"`
	ToolOutput   Sample `json:"tool_output"`
	// Profile is a workload profile with the fitted distributions (lognormal,
	// clipped to the observed p1..p99 range); think time is not in the data
	// and keeps the reference P0 assumption.
	Profile Profile `json:"profile"`
}

// Fit summarises measured trajectories and fits a profile to them.
func Fit(ms []corpus.Measure, name string) (*Fitted, error) {
	var start, cmax, turns, growth, out, tool []int
	calls := 0
	for _, m := range ms {
		if len(m.Calls) == 0 {
			continue
		}
		calls += len(m.Calls)
		start = append(start, m.Calls[0].Context)
		last := m.Calls[len(m.Calls)-1]
		cmax = append(cmax, last.Context)
		turns = append(turns, len(m.Calls))
		growth = append(growth, m.Growth...)
		for _, c := range m.Calls {
			out = append(out, c.Output)
		}
		tool = append(tool, m.ToolOutputs...)
	}
	if len(start) == 0 {
		return nil, fmt.Errorf("fit workload: no trajectory with an assistant call")
	}
	f := &Fitted{Trajectories: len(start), Calls: calls,
		ContextStart: summarize(start), ContextMax: summarize(cmax), Turns: summarize(turns),
		Growth: summarize(growth), OutputTokens: summarize(out), ToolOutput: summarize(tool)}
	ref := DefaultSpec().Profiles[0]
	f.Profile = Profile{
		Name:         name,
		Weight:       1,
		ContextStart: lognormalOf(f.ContextStart, start),
		Growth:       lognormalOf(f.Growth, growth),
		OutputTokens: lognormalOf(f.OutputTokens, out),
		ThinkTime:    ref.ThinkTime,
		AtMax:        "new-session",
	}
	return f, nil
}

func summarize(xs []int) Sample {
	s := Sample{N: len(xs)}
	if len(xs) == 0 {
		return s
	}
	slices.Sort(xs)
	q := func(p float64) int { return xs[rank(len(xs), p)] }
	s.P10, s.P50, s.P90, s.P99, s.Max = q(0.1), q(0.5), q(0.9), q(0.99), xs[len(xs)-1]
	var sum, sum2 float64
	n := 0
	for _, x := range xs {
		if x > 0 {
			l := math.Log(float64(x))
			sum += l
			sum2 += l * l
			n++
		}
	}
	if n > 0 {
		mean := sum / float64(n)
		s.Median = round3(math.Exp(mean))
		if n > 1 {
			s.Sigma = round3(math.Sqrt(math.Max(0, (sum2-float64(n)*mean*mean)/float64(n-1))))
		}
	}
	return s
}

func round3(x float64) float64 { return math.Round(x*1000) / 1000 }

// lognormalOf is the fitted lognormal clipped to the observed p1..p99.
func lognormalOf(s Sample, sorted []int) DistSpec {
	if s.Median <= 0 {
		return Constant(float64(max(1, s.P50)))
	}
	lo := float64(max(1, sorted[rank(len(sorted), 0.01)]))
	hi := float64(max(sorted[rank(len(sorted), 0.99)], int(lo)))
	return Lognormal(s.Median, s.Sigma).Clip(lo, hi)
}

// FitTrajectories measures every trajectory of the parquet sources with tok
// and fits a profile called name. Only the token counts are kept, so memory
// does not grow with the text.
func FitTrajectories(ctx context.Context, sources []corpus.Source, tok *tokenizer.Tokenizer, name string) (*Fitted, corpus.ReadStats, error) {
	var ms []corpus.Measure
	st, err := corpus.ReadTrajectories(ctx, sources, func(t *corpus.Trajectory) error {
		m, err := corpus.MeasureTrajectory(t, tok)
		if err != nil {
			return fmt.Errorf("measure trajectory %s: %w", t.ID, err)
		}
		ms = append(ms, m)
		return nil
	})
	if err != nil {
		return nil, st, err
	}
	f, err := Fit(ms, name)
	return f, st, err
}
