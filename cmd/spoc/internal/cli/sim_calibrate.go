package cli

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/spoc-project/spoc/perfmodel"
	"github.com/spoc-project/spoc/perfmodel/calibrate"
)

func newSimCalibrateCmd() *cobra.Command {
	var (
		model, out string
		params     []string
		maxEval    int
		asJSON     bool
		records    string
		file       string
	)
	cmd := &cobra.Command{
		Use:   "calibrate MEASUREMENTS... [-o calibration.json] | --records DIR [-c FILE] [-o correction.json]",
		Short: "Fit the simulator's cost-model factors to measured benchmarks (CSV or vllm bench serve JSON)",
		Long: "Fits perfmodel factors so that replaying each measured benchmark reproduces its throughput, TPOT and\n" +
			"TTFT, and writes them as a calibration file for engine.sim.calibration. Several files (GPUs, engine\n" +
			"versions) are fitted jointly: one set of achieved fractions for all of them.\n\n" +
			"With --records DIR it fits the per-deployment correction (compute and memory multipliers and a per-step\n" +
			"term) to the live runs of a multi-fidelity plan's output folder (DIR/runs.json), as the plan's\n" +
			"calibrate phase does, and writes it for engine.sim.correction (docs/fidelity.md); -c names the plan's\n" +
			"configuration (workload, SLA, deployment); --params and --max-evaluations do not apply.",
		Args: func(cmd *cobra.Command, args []string) error {
			if records != "" {
				return cobra.NoArgs(cmd, args)
			}
			return cobra.MinimumNArgs(1)(cmd, args)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if records != "" {
				return simCalibrateRecords(cmd.Context(), cmd.OutOrStdout(), file, records, out, asJSON)
			}
			opts := calibrate.Options{Model: model, Params: params, MaxEvaluations: maxEval}
			return simCalibrate(cmd.Context(), cmd.OutOrStdout(), args, opts, out, asJSON)
		},
	}
	cmd.Flags().StringVar(&model, "model", "", "model of points that do not name one (default "+calibrate.DefaultModel+")")
	cmd.Flags().StringSliceVar(&params, "params", nil, "factors to fit (default: "+strings.Join(calibrate.DefaultParams, ",")+")")
	cmd.Flags().IntVar(&maxEval, "max-evaluations", 0, "bound on objective evaluations (default 400)")
	cmd.Flags().StringVar(&records, "records", "", "fit the per-deployment correction to a multi plan's live runs in this folder instead")
	cmd.Flags().StringVarP(&file, "config", "c", "", "with --records: the plan's configuration (workload, SLA, deployment)")
	cmd.Flags().StringVarP(&out, "out", "o", "", "write the calibration file here")
	cmd.Flags().StringVar(&out, "output", "", "write the calibration file here")
	_ = cmd.Flags().MarkDeprecated("output", "use --out")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the fit as JSON")
	return cmd
}

// simCalibrate fits the cost model's factors to the measurement files and
// writes them to out (none when empty).
func simCalibrate(ctx context.Context, w io.Writer, files []string, opts calibrate.Options, out string, asJSON bool) error {
	pts, err := readSimMeasurementFiles(files)
	if err != nil {
		return err
	}
	if opts.Model != "" {
		if _, err := perfmodel.LookupModel(opts.Model); err != nil {
			return usageError(err)
		}
	}
	res, err := calibrate.Fit(ctx, pts, opts)
	if err != nil {
		return fmt.Errorf("sim calibrate: %w", err)
	}
	if out != "" {
		if err := writeAtomic(out, func(w io.Writer) error { return writeJSON(w, res) }); err != nil {
			return fmt.Errorf("sim calibrate: %w", err)
		}
	}
	if asJSON {
		return writeJSON(w, res)
	}
	fmt.Fprintf(w, "fitted %s in %d evaluations\n", strings.Join(res.Params, ", "), res.Evaluations)
	printUnidentified(w, res)
	printSimValidation(w, res.Validation)
	if out != "" {
		fmt.Fprintf(w, "wrote %s (set engine.sim.calibration to use it)\n", out)
	}
	return nil
}
