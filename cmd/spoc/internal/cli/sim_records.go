package cli

import (
	"context"
	"fmt"
	"io"

	"github.com/spoc-project/spoc/config"
	"github.com/spoc-project/spoc/plan"
)

// simCalibrateRecords is spoc sim calibrate --records DIR: the multi
// plan's calibrate phase by hand. It fits the simulator's correction to
// the live runs DIR/runs.json lists (a multi plan's output folder), with
// the configuration's workload, SLA and deployment, and writes the file
// engine.sim.correction names.
func simCalibrateRecords(ctx context.Context, w io.Writer, file, dir, out string, asJSON bool) error {
	cfg, err := loadConfig(file)
	if err != nil {
		return err
	}
	s, err := cfg.Setup(config.SetupOptions{})
	if err != nil {
		return usageError(err)
	}
	fit, err := plan.CalibrateRecords(ctx, s, dir, plan.Options{})
	if err != nil {
		return fmt.Errorf("sim calibrate --records: %w", err)
	}
	if out != "" {
		if err := writeAtomic(out, func(w io.Writer) error { return plan.WriteCorrectionFit(w, fit) }); err != nil {
			return fmt.Errorf("sim calibrate --records: %w", err)
		}
	}
	if asJSON {
		return plan.WriteCorrectionFit(w, fit)
	}
	c, f := fit.Correction, fit.Fit
	fmt.Fprintf(w, "correction for %s from %d live runs: %s\n", fit.Deployment, fit.Runs, plan.DescribeCorrection(c, f.Terms))
	fmt.Fprintf(w, "RMS relative error (%v): built-in %s, fitted %s", f.Metrics, plan.PercentOrAbsent(f.UncalibratedError), plan.PercentOrAbsent(f.FittedError))
	if f.HeldBackError != nil {
		fmt.Fprintf(w, ", held-back run %.1f%%", 100**f.HeldBackError)
	}
	fmt.Fprintf(w, " (%d replays)\n", f.Evaluations)
	if f.ErrorsAbsent != "" {
		fmt.Fprintf(w, "absent: %s\n", f.ErrorsAbsent)
	}
	if out != "" {
		fmt.Fprintf(w, "wrote %s (set engine.sim.correction to use it)\n", out)
	}
	return nil
}
