package cli

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/spoc-project/spoc/workload"
)

func init() { register(newWorkloadCmd) }

func newWorkloadCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "workload",
		Short: "Inspect or export the session scripts of the configured workload",
	}
	cmd.AddCommand(newWorkloadInspectCmd(), newWorkloadExportCmd())
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
			return writeWorkloadFile(out, func(f io.Writer) error { return workload.Export(cmd.Context(), f, w, sessions) })
		},
	}
	cmd.Flags().StringVarP(&cfgPath, "config", "c", "", "configuration file; defaults when empty")
	cmd.Flags().StringVarP(&out, "out", "o", "", "output file (JSON lines), - for standard output")
	cmd.Flags().IntVar(&sessions, "sessions", 2000, "number of sessions (first session of users 0..N-1)")
	return cmd
}

// writeWorkloadFile writes path through a temporary file in the same folder
// and renames it into place, so an interrupted write never leaves a partial
// file under the final name.
func writeWorkloadFile(path string, write func(io.Writer) error) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	tmp := f.Name()
	defer os.Remove(tmp) // no-op after a successful rename
	if err := write(f); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
