package cli

import (
	"fmt"
	"io"
	"sort"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/spoc-project/spoc/config"
	"github.com/spoc-project/spoc/corpus"
	"github.com/spoc-project/spoc/tokenizer"
	"github.com/spoc-project/spoc/workload"
)

func init() { register(newWorkloadCmd) }

func newWorkloadCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "workload",
		Short: "Inspect or export the session scripts of the configured workload",
	}
	cmd.AddCommand(newWorkloadInspectCmd(), newWorkloadExportCmd(), newWorkloadFitCmd())
	return cmd
}

// openWorkload loads -c FILE and opens its workload (generator or import).
func openWorkload(cfgPath string) (workload.Workload, uint64, error) {
	cfg, err := loadConfig(cfgPath)
	if err != nil {
		return nil, 0, err
	}
	w, err := workload.Open(cfg.Workload, cfg.Engine.MaxModelLen)
	if err != nil {
		return nil, 0, usageError(err)
	}
	return w, cfg.Workload.Seed, nil
}

func newWorkloadInspectCmd() *cobra.Command {
	var (
		cfgPath  string
		sessions int
		asJSON   bool
	)
	cmd := &cobra.Command{
		Use:   "inspect",
		Short: "Per-profile session shapes and the ideal prefix-cache hit rate",
		Long: `Inspect generates the first session of N users (lengths and segment layout
only, no text) and prints, per profile, the share of sessions, the context at
session start (p50/p95), the largest context, turns per session, output budget
and think time, then the prefix statistics: the ideal prefix-cache hit rate
(share of prompt tokens an infinite cache would serve, overall, per profile and
for first turns only) and how prompt tokens split between the shared root,
team subtrees, private files and the conversation. See docs/workload.md.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if sessions < 1 {
				return usageErrorf("--sessions must be at least 1, got %d", sessions)
			}
			w, seed, err := openWorkload(cfgPath)
			if err != nil {
				return err
			}
			in, err := workload.Inspect(cmd.Context(), w, workload.InspectOptions{Sessions: sessions, Seed: seed})
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), in)
			}
			return printInspection(cmd.OutOrStdout(), in)
		},
	}
	cmd.Flags().StringVarP(&cfgPath, "config", "c", "", "configuration file; defaults when empty")
	cmd.Flags().IntVar(&sessions, "sessions", 2000, "number of sessions (first session of users 0..N-1)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print as JSON")
	return cmd
}

func printInspection(w io.Writer, in *workload.Inspection) error {
	fmt.Fprintf(w, "%d sessions, %d requests\n\n", in.Sessions, in.Requests)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "profile\tshare\tstart p50\tstart p95\tend p50\tmax\tturns p50\toutput p50\tthink p50 (s)\tideal hit\t")
	for _, p := range in.Profiles {
		fmt.Fprintf(tw, "%s\t%.3f\t%d\t%d\t%d\t%d\t%d\t%d\t%.1f\t%.3f\t\n", p.Name, p.Share, p.ContextStartP50, p.ContextStartP95, p.ContextEndP50, p.ContextMax, p.TurnsP50, p.OutputBudgetP50, p.ThinkTimeP50S, p.IdealHitRate)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "\nideal prefix-cache hit rate: %.3f (first turns only: %.3f) of %d prompt tokens\n", in.Prefix.IdealHitRate, in.Prefix.FirstTurnHitRate, in.Prefix.PromptTokens)
	for _, part := range []struct {
		title string
		m     map[string]float64
	}{{"prompt tokens by source", in.Prefix.Split}, {"session-start context by source", in.Prefix.StartSplit}} {
		fmt.Fprintf(w, "%s:", part.title)
		kinds := make([]string, 0, len(part.m))
		for k := range part.m {
			kinds = append(kinds, k)
		}
		sort.Slice(kinds, func(i, j int) bool { return part.m[kinds[i]] > part.m[kinds[j]] })
		for _, k := range kinds {
			fmt.Fprintf(w, " %s %.1f%%", k, 100*part.m[k])
		}
		fmt.Fprintln(w)
	}
	return nil
}

func newWorkloadExportCmd() *cobra.Command {
	var (
		cfgPath, out string
		sessions     int
	)
	cmd := &cobra.Command{
		Use:   "export --out FILE",
		Short: "Write the session scripts as JSON lines",
		Long: `Export writes the first session of N users as JSON lines, one session script
per line: profile, team, prefix segments and every turn's new content, target
prompt tokens, output budget, reply and think time. Same configuration and seed
give a byte-identical file. "--out -" writes to standard output.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if out == "" {
				return usageErrorf("workload export needs --out FILE")
			}
			if sessions < 1 {
				return usageErrorf("--sessions must be at least 1, got %d", sessions)
			}
			w, _, err := openWorkload(cfgPath)
			if err != nil {
				return err
			}
			if out == "-" {
				return workload.Export(cmd.Context(), cmd.OutOrStdout(), w, sessions)
			}
			return writeAtomic(out, func(f io.Writer) error { return workload.Export(cmd.Context(), f, w, sessions) })
		},
	}
	cmd.Flags().StringVarP(&cfgPath, "config", "c", "", "configuration file; defaults when empty")
	cmd.Flags().StringVarP(&out, "out", "o", "", "output file (JSON lines), - for standard output")
	cmd.Flags().IntVar(&sessions, "sessions", 2000, "number of sessions (first session of users 0..N-1)")
	return cmd
}

func newWorkloadFitCmd() *cobra.Command {
	var (
		from, out, tok, name string
		asJSON               bool
	)
	cmd := &cobra.Command{
		Use:   "fit --from coderforge|swe-rebench PATH... [--out profiles.yaml]",
		Short: "Fit a workload profile to real agent trajectories",
		Long: `Fit measures every trajectory (CoderForge-Preview or SWE-rebench parquet files or
folders): context at each model call, growth between calls, output tokens per
call, tool-output sizes, calls per trajectory; prints their quantiles and
lognormal fits, and with --out writes a configuration fragment whose
workload.profiles replace the defaults (spoc workload inspect -c FILE).
Think times are not in the data and keep the reference assumption.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if from != corpus.DatasetCoderForge && from != corpus.DatasetSWERebench {
				return usageErrorf("--from must be %s or %s, got %q", corpus.DatasetCoderForge, corpus.DatasetSWERebench, from)
			}
			t, err := tokenizer.New(tok)
			if err != nil {
				return usageError(err)
			}
			sources := make([]corpus.Source, len(args))
			for i, p := range args {
				sources[i] = corpus.Source{Dataset: from, Path: p}
			}
			f, st, err := workload.FitTrajectories(cmd.Context(), sources, t, name)
			if err != nil {
				return err
			}
			if out != "" {
				if err := writeFittedProfile(out, f, from, tok); err != nil {
					return err
				}
			}
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), map[string]any{"read": st, "fit": f})
			}
			if err := writeWorkloadFit(cmd.OutOrStdout(), f, st); err != nil {
				return err
			}
			if out != "" {
				fmt.Fprintf(cmd.OutOrStdout(), "\nprofile %q written to %s\n", name, out)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&from, "from", "", "trajectory dataset: coderforge or swe-rebench")
	f.StringVarP(&out, "out", "o", "", "write the fitted profile as a configuration fragment (YAML)")
	f.StringVar(&tok, "tokenizer", tokenizer.O200kBase, "tokenizer to count tokens with")
	f.StringVar(&name, "name", "fitted", "name of the fitted profile")
	f.BoolVar(&asJSON, "json", false, "print as JSON")
	return cmd
}

// writeWorkloadFit prints the measured distributions and their fits.
func writeWorkloadFit(w io.Writer, f *workload.Fitted, st corpus.ReadStats) error {
	fmt.Fprintf(w, "%d trajectories, %d model calls (%d rows, %d malformed and skipped)\n\n", f.Trajectories, f.Calls, st.Rows, st.Malformed)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "tokens\tn\tp10\tp50\tp90\tp99\tmax\tlognormal median\tsigma\t")
	for _, r := range []struct {
		name string
		s    workload.Sample
	}{{"context at first call", f.ContextStart}, {"context at last call", f.ContextMax}, {"calls per trajectory", f.Turns}, {"growth per call", f.Growth}, {"output per call", f.OutputTokens}, {"tool output", f.ToolOutput}} {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t%.0f\t%.2f\t\n", r.name, r.s.N, r.s.P10, r.s.P50, r.s.P90, r.s.P99, r.s.Max, r.s.Median, r.s.Sigma)
	}
	return tw.Flush()
}

// writeFittedProfile writes the fitted profile as a configuration fragment.
func writeFittedProfile(out string, f *workload.Fitted, from, tok string) error {
	return writeAtomic(out, func(w io.Writer) error {
		fmt.Fprintf(w, "# Fitted by spoc workload fit from %d trajectories (%d model calls) of %s, tokenizer %s.\n", f.Trajectories, f.Calls, from, tok)
		fmt.Fprintf(w, "# Think times are not in the data: they keep the reference assumption.\n")
		return config.WriteProfiles(w, []config.Profile{f.Profile})
	})
}
