package cli

import (
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/spoc-project/spoc/corpus"
	"github.com/spoc-project/spoc/tokenizer"
)

func init() { register(newCorpusCmd) }

func newCorpusCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "corpus",
		Short: "Build a prompt corpus from agent trajectories or a source tree, and describe it",
	}
	cmd.AddCommand(newCorpusBuildCmd(), newCorpusStatsCmd())
	return cmd
}

type corpusBuildFlags struct {
	from, out, defaultLicense, tok string
	licenses                       []string
	countTokens, asJSON            bool
}

func newCorpusBuildCmd() *cobra.Command {
	var f corpusBuildFlags
	cmd := &cobra.Command{
		Use:   "build --from coderforge|swe-rebench|dir PATH... --out FILE",
		Short: "Extract system prompts, tasks, tool output, code and diffs into a corpus file",
		Long: `Build reads CoderForge-Preview trajectories/*.parquet, SWE-rebench-openhands
trajectories.parquet (files or folders of them, as downloaded; nothing is
fetched) or a local source tree, and writes a corpus file (JSON lines of
documents with kind, text, source and licence) that workload.corpus can use.
Malformed rows are counted and skipped. Memory stays bounded on any input size.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return runCorpusBuild(cmd, &f, args) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.from, "from", "", "input kind: coderforge, swe-rebench or dir")
	fl.StringVarP(&f.out, "out", "o", "", "corpus file to write")
	fl.StringSliceVar(&f.licenses, "license", nil, "keep only documents under these licences (SPDX, comma separated)")
	fl.StringVar(&f.defaultLicense, "default-license", "", "licence of rows and files that record none")
	fl.BoolVar(&f.countTokens, "count-tokens", false, "store each document's token count (slower)")
	fl.StringVar(&f.tok, "tokenizer", tokenizer.O200kBase, "tokenizer for --count-tokens")
	fl.BoolVar(&f.asJSON, "json", false, "print the build statistics as JSON")
	return cmd
}

func runCorpusBuild(cmd *cobra.Command, f *corpusBuildFlags, args []string) error {
	if !slices.Contains(corpus.Datasets, f.from) {
		return usageErrorf("--from must be one of %s, got %q", strings.Join(corpus.Datasets, ", "), f.from)
	}
	if f.out == "" {
		return usageErrorf("corpus build needs --out FILE")
	}
	opts := corpus.BuildOptions{Licenses: f.licenses, DefaultLicense: f.defaultLicense}
	if f.countTokens {
		t, err := tokenizer.New(f.tok)
		if err != nil {
			return usageError(err)
		}
		opts.Tokenizer = t
	}
	if fi, err := os.Stderr.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
		opts.Progress = func(done, total int64) {
			fmt.Fprintf(cmd.ErrOrStderr(), "\rread %.1f / %.1f MB", float64(done)/1e6, float64(total)/1e6)
			if done == total {
				fmt.Fprintln(cmd.ErrOrStderr())
			}
		}
	}
	sources := make([]corpus.Source, len(args))
	for i, p := range args {
		sources[i] = corpus.Source{Dataset: f.from, Path: p}
	}
	var st *corpus.BuildStats
	var buildErr error
	err := writeAtomic(f.out, func(w io.Writer) error {
		st, buildErr = corpus.Build(cmd.Context(), sources, w, opts)
		return buildErr
	})
	if buildErr != nil {
		// a problem with the inputs, not with writing out
		return fmt.Errorf("build corpus: %w", buildErr)
	}
	if err != nil {
		return err
	}
	if f.asJSON {
		return writeJSON(cmd.OutOrStdout(), st)
	}
	writeCorpusStats(cmd.OutOrStdout(), f.out, st)
	return nil
}

// writeCorpusStats says what a corpus build read and wrote.
func writeCorpusStats(w io.Writer, out string, st *corpus.BuildStats) {
	fmt.Fprintf(w, "%s: %d rows from %d inputs, %d malformed (skipped), %d documents filtered by licence\n", out, st.Rows, st.Files, st.Malformed, st.Skipped)
	for reason, n := range st.Reasons {
		fmt.Fprintf(w, "  malformed: %s: %d\n", reason, n)
	}
	for _, k := range corpus.Kinds {
		if st.Docs[k] > 0 {
			fmt.Fprintf(w, "  %-7s %8d documents %12d bytes\n", k, st.Docs[k], st.DocBytes[k])
		}
	}
}

func newCorpusStatsCmd() *cobra.Command {
	var (
		tok    string
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "stats FILE",
		Short: "Documents, bytes, tokens and licences of a corpus file, per kind",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			t, err := tokenizer.New(tok)
			if err != nil {
				return usageError(err)
			}
			f, err := os.Open(args[0])
			if err != nil {
				return fmt.Errorf("open corpus: %w", err)
			}
			defer f.Close()
			s, err := corpus.Summarize(f, args[0], t)
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), s)
			}
			w := cmd.OutOrStdout()
			fmt.Fprintf(w, "%s: %d documents\n", args[0], s.Docs)
			tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
			fmt.Fprintln(tw, "kind\tdocs\tbytes\ttokens\tp50\tp90\tmax\t")
			for _, k := range s.Kinds {
				fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t\n", k.Kind, k.Docs, k.Bytes, k.Tokens, k.TokensP50, k.TokensP90, k.TokensMax)
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			lics := make([]string, 0, len(s.Licenses))
			for l := range s.Licenses {
				lics = append(lics, l)
			}
			slices.Sort(lics)
			fmt.Fprint(w, "licences:")
			for _, l := range lics {
				fmt.Fprintf(w, " %s %d", l, s.Licenses[l])
			}
			fmt.Fprintln(w)
			return nil
		},
	}
	cmd.Flags().StringVar(&tok, "tokenizer", tokenizer.O200kBase, "tokenizer for documents without a stored count")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print as JSON")
	return cmd
}
