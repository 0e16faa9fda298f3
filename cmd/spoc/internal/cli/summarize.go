package cli

import (
	"fmt"

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
			res, err := capacity.Summarize(args[0], cfg.SLA.Result(), result.WithClientBoundLag(cfg.Run.ClientBoundLagP99.D()))
			if err != nil {
				return err
			}
			if res.Truncated {
				fmt.Fprintf(cmd.ErrOrStderr(), "spoc: warning: %s ends in a truncated line (killed run?); it was skipped\n", args[0])
			}
			if err := printSummary(cmd.OutOrStdout(), res.Summary, asJSON); err != nil {
				return err
			}
			if res.Provenance != nil && !asJSON {
				fmt.Fprintf(cmd.OutOrStdout(), "source: %s\n", res.Provenance.String())
			}
			if check && !res.Summary.SLA.Pass {
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
