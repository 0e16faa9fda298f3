package cli

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/spoc-project/spoc/perfmodel"
	"github.com/spoc-project/spoc/perfmodel/calibrate"
	"github.com/spoc-project/spoc/sim"
)

// readSimMeasurementFiles reads and concatenates several measurement files.
func readSimMeasurementFiles(paths []string) ([]calibrate.Point, error) {
	var all []calibrate.Point
	for _, p := range paths {
		pts, err := readSimMeasurements(p)
		if err != nil {
			return nil, err
		}
		all = append(all, pts...)
	}
	return all, nil
}

// simValidateJSON is `sim validate --json`: the validation, its breakdowns,
// and with --leave-out the fit on the other GPUs.
type simValidateJSON struct {
	LeftOut *calibrate.HeldOut `json:"left_out,omitempty"`
	// Validation is the out-of-sample error with --leave-out, the error of
	// the given factors otherwise.
	Validation calibrate.Validation         `json:"validation"`
	Breakdown  map[string][]calibrate.Group `json:"breakdown"`
}

func breakdowns(v calibrate.Validation) map[string][]calibrate.Group {
	return map[string][]calibrate.Group{
		"gpu": calibrate.Breakdown(v, calibrate.ByGPU), "engine": calibrate.Breakdown(v, calibrate.ByEngine),
		"tp": calibrate.Breakdown(v, calibrate.ByTensorParallel), "concurrency": calibrate.Breakdown(v, calibrate.ByConcurrency),
	}
}

func newSimValidateCmd() *cobra.Command {
	var (
		model, calib, leaveOut string
		maxEval                int
		asJSON                 bool
	)
	cmd := &cobra.Command{
		Use:   "validate MEASUREMENTS... [--calibration FILE | --leave-out GPU]",
		Short: "Compare the simulator's predictions with measured benchmarks; fit without one GPU and predict it",
		Long: "Without --leave-out, replays every point under the built-in factors of the model's family (or\n" +
			"--calibration) and reports the error. With --leave-out GPU, fits the factors on the points of every\n" +
			"other GPU, predicts the points of GPU, and reports the out-of-sample error beside the in-sample one.\n" +
			"Errors are given per metric, GPU, engine version, tensor-parallel size and concurrency band: mean\n" +
			"absolute percentage error (MAPE) and mean signed error (negative: predicted below measured).",
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if leaveOut != "" && calib != "" {
				return usageErrorf("--leave-out fits its own factors; it does not take --calibration")
			}
			pts, err := readSimMeasurementFiles(args)
			if err != nil {
				return err
			}
			out, err := simValidate(cmd.Context(), pts, calibrate.Options{Model: model, MaxEvaluations: maxEval}, calib, leaveOut)
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), out)
			}
			writeSimValidation(cmd.OutOrStdout(), out)
			return nil
		},
	}
	cmd.Flags().StringVar(&model, "model", "", "model of points that do not name one (default "+calibrate.DefaultModel+")")
	cmd.Flags().StringVar(&calib, "calibration", "", "calibration file (default: the model family's built-in factors)")
	cmd.Flags().StringVar(&leaveOut, "leave-out", "", "fit on the other GPUs' points and predict this GPU's (e.g. b200)")
	cmd.Flags().IntVar(&maxEval, "max-evaluations", 0, "bound on objective evaluations of the --leave-out fit (default 400)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print every point's prediction and the breakdowns as JSON")
	return cmd
}

// printErrorTable prints MAPE and mean signed error of throughput, TPOT and
// TTFT overall and per GPU, engine, TP and concurrency band.
func printErrorTable(w io.Writer, b map[string][]calibrate.Group, v calibrate.Validation) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "group\tpoints\ttput MAPE\ttput signed\tTPOT MAPE\tTPOT signed\tTTFT MAPE\tTTFT signed\t")
	all := calibrate.Breakdown(v, func(calibrate.Point) string { return "all" })
	for _, dim := range []string{"", "gpu", "engine", "tp", "concurrency"} {
		gs := all
		if dim != "" {
			gs = b[dim]
		}
		for _, g := range gs {
			fmt.Fprintf(tw, "%s\t%d", g.Key, g.Points)
			for _, n := range calibrate.MetricNames {
				fmt.Fprintf(tw, "\t%.1f%%\t%+.1f%%", g.MAPE[n], g.MeanSigned[n])
			}
			fmt.Fprintln(tw, "\t")
		}
	}
	tw.Flush()
}

// printUnidentified says, for each factor a fit could not identify, whether
// it shares a fitted factor of another kernel class or kept its start value.
func printUnidentified(w io.Writer, res calibrate.Result) {
	for _, n := range res.Unidentified {
		if from, ok := res.Tied[n]; ok {
			fmt.Fprintf(w, "%s: no fitted point runs its kernel class; shares the fitted %s\n", n, from)
		} else {
			fmt.Fprintf(w, "%s: no fitted point exercises it; start value kept\n", n)
		}
	}
}

// simValidate replays pts under the built-in factors of opts.Model's
// family, the calibration file calib, or, with leaveOut, factors fitted
// without that GPU's points.
func simValidate(ctx context.Context, pts []calibrate.Point, opts calibrate.Options, calib, leaveOut string) (simValidateJSON, error) {
	name := opts.Model
	if name == "" {
		name = calibrate.DefaultModel
	}
	m, err := perfmodel.LookupModel(name)
	if err != nil {
		return simValidateJSON{}, usageError(err)
	}
	out := simValidateJSON{}
	if leaveOut != "" {
		h, err := calibrate.LeaveGPUOut(ctx, pts, leaveOut, opts)
		if err != nil {
			return simValidateJSON{}, usageError(fmt.Errorf("sim validate: %w", err))
		}
		out.LeftOut, out.Validation = &h, h.Validation
	} else {
		factors := perfmodel.DefaultFactors(m)
		if calib != "" {
			if factors, err = sim.LoadCalibration(calib); err != nil {
				return simValidateJSON{}, usageError(err)
			}
		}
		if out.Validation, err = calibrate.Validate(ctx, pts, factors, opts); err != nil {
			return simValidateJSON{}, fmt.Errorf("sim validate: %w", err)
		}
	}
	out.Breakdown = breakdowns(out.Validation)
	return out, nil
}

// writeSimValidation prints the errors of a validation, in and out of
// sample for a fit without one GPU.
func writeSimValidation(w io.Writer, out simValidateJSON) {
	if h := out.LeftOut; h != nil {
		fmt.Fprintf(w, "fit without %s: %d points, %s\n", h.GPU, len(h.Fit.Validation.Rows), strings.Join(calibrate.GPUsOf(h.Fit.Validation), ", "))
		printUnidentified(w, h.Fit)
		fmt.Fprintln(w, "\nin-sample (the GPUs fitted):")
		printErrorTable(w, breakdowns(h.Fit.Validation), h.Fit.Validation)
		fmt.Fprintf(w, "\nout-of-sample (%s, not fitted):\n", h.GPU)
	}
	printErrorTable(w, out.Breakdown, out.Validation)
}
