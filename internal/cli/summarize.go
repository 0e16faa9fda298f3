package cli

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/spoc-project/spoc/capacity"
	"github.com/spoc-project/spoc/result"
)

func init() { register(newSummarizeCmd) }

func newSummarizeCmd() *cobra.Command {
	var (
		cfgPath       string
		asJSON, check bool
	)
	cmd := &cobra.Command{
		Use:   "summarize RECORDS.jsonl",
		Short: "Summarize a records file and judge it against the SLA (exit 3 with --check when not met)",
		Long: `Summarize reads the JSON lines written by spoc run (or spoc sim run), plain or
gzip-compressed (a plan's records/users-NNNNN.jsonl.gz), leaves out
warm-up requests, and prints per-profile and overall latency percentiles,
throughput, goodput, errors by class and the SLA verdict naming the violated
clause. A truncated last line (a killed run) is skipped with a warning.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := loadConfig(cfgPath)
			if err != nil {
				return err
			}
			f, err := os.Open(args[0])
			if err != nil {
				return fmt.Errorf("open records: %w", err)
			}
			defer f.Close()
			// the run's own window, when spoc run kept it beside the records;
			// else the window is inferred from the records (and says so)
			var window result.Window
			var measured string
			if inf, err := os.Open(result.RunInfoPath(args[0])); err == nil {
				info, err := result.ReadRunInfo(inf, result.RunInfoPath(args[0]))
				inf.Close()
				if err != nil {
					return err
				}
				window = info.Window
				var p capacity.Provenance
				if json.Unmarshal(info.Provenance, &p) == nil && p.Source != "" {
					measured = provenanceLine(p)
				}
			}
			sum := result.NewSummary(cfg.SLA.Result(), window, result.WithClientBoundLag(cfg.Run.ClientBoundLagP99.D()))
			records := 0
			truncated, err := result.ReadAll(f, args[0], func(r *result.Record) error {
				records++
				return sum.Write(r)
			})
			if err != nil {
				return err
			}
			if records == 0 {
				// An empty file is a run that never started (or the wrong
				// file), not a run that measured nothing and passed.
				return fmt.Errorf("%s holds no records", args[0])
			}
			if truncated {
				fmt.Fprintf(cmd.ErrOrStderr(), "spoc: warning: %s ends in a truncated line (killed run?); it was skipped\n", args[0])
			}
			res := sum.Result()
			if err := printSummary(cmd.OutOrStdout(), res, asJSON); err != nil {
				return err
			}
			if measured != "" && !asJSON {
				fmt.Fprintf(cmd.OutOrStdout(), "source: %s\n", measured)
			}
			if check && !res.SLA.Pass {
				return &ExitError{Code: ExitSLANotMet}
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&cfgPath, "config", "c", "", "configuration file (for the SLA); defaults when empty")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the summary as JSON")
	cmd.Flags().BoolVar(&check, "check", false, "exit 3 when the SLA is not met")
	return cmd
}
