package plan

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"

	"github.com/spoc-project/spoc/capacity"
	"github.com/spoc-project/spoc/internal/atomicfile"
)

// finalSweep sweeps the chosen configuration live around its predicted
// ceiling instead of from sweep.start: the grid is the verified counts
// (measured already, not run again), then upwards by half again each step
// to sweep.max; the sweep bisects from the last pass to the first failure
// as always, and towards 0 when even the lowest verified count failed.
// The server verify left running for these flags is reused.
func (p *planner) finalSweep(ctx context.Context) (string, error) {
	m := p.m
	known := map[int]capacity.Repeat{}
	var grid []int
	top := 0
	recDir := filepath.Join(p.s.OutDir, stagingRecords)
	if err := os.MkdirAll(recDir, 0o755); err != nil {
		return "", err
	}
	key := describeParams(p.sum.Capacity.Config)
	for u, ev := range m.known[key] {
		// the verified run is this level: its records are the level's
		if err := copyFile(filepath.Join(p.s.OutDir, m.knownRecords[key][u]), filepath.Join(recDir, fmt.Sprintf("users-%05d.jsonl", u))); err != nil {
			return "", err
		}
		known[u] = ev.Repeat()
		grid = append(grid, u)
		top = max(top, u)
	}
	for u := top; u < p.s.Sweep.Max; {
		u = min(max(u*3/2, u+1), p.s.Sweep.Max)
		grid = append(grid, u)
	}
	if len(grid) == 0 {
		grid = append(grid, max(m.aim, m.predicted, 1))
	}
	opts := p.s.Sweep.SweepOptions
	opts.Grid, opts.Known, opts.Prior = dedupeSorted(grid), known, m.predictedEstimate
	p.logf("   live sweep around the predicted ceiling %d: grid %v (verified levels %d reused), then bisection", m.predicted, opts.Grid, len(known))
	detail, err := p.sweep(ctx, p.ev, opts)
	if err != nil {
		return "", err
	}
	return detail + "; " + p.engineSoFar(), nil
}

func dedupeSorted(xs []int) []int {
	sort.Ints(xs)
	out := xs[:0]
	for i, x := range xs {
		if i == 0 || x != xs[i-1] {
			out = append(out, x)
		}
	}
	return out
}

// copyFile copies src to dst (created atomically).
func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := atomicfile.Create(dst)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Abort()
		return err
	}
	return out.Close()
}
