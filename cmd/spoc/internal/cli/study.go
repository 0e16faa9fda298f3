package cli

import (
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/spoc-project/spoc/search"
	"github.com/spoc-project/spoc/study"
)

func init() { register(newStudyCmd) }

// studyStorageDefault is --storage's default: $SPOC_STORAGE, else the
// database spoc tune and spoc plan write with their defaults (search.storage
// sqlite:study.db in --out spoc-out), so that "spoc tune -c x.yaml && spoc
// study ls" shows the study just run.
func studyStorageDefault() string {
	if u := os.Getenv("SPOC_STORAGE"); u != "" {
		return u
	}
	return "sqlite:" + filepath.Join("spoc-out", "study.db")
}

func newStudyCmd() *cobra.Command {
	var storage string
	cmd := &cobra.Command{
		Use:   "study",
		Short: "List, inspect and export stored search studies",
		Long: `Studies are the durable record of spoc tune searches: every trial's parameters,
objective values, constraints, state and timestamps, in SQLite (default) or
PostgreSQL (several workers sharing one study).`,
	}
	cmd.PersistentFlags().StringVar(&storage, "storage", studyStorageDefault(), "study storage: sqlite:PATH, a plain path, or postgres://… (env SPOC_STORAGE)")
	cmd.AddCommand(newStudyLsCmd(&storage), newStudyShowCmd(&storage), newStudyExportCmd(&storage))
	return cmd
}

// studyOpenExisting opens storage for the read-only verbs (ls, show,
// export): a SQLite file that does not exist is an error naming it, rather
// than a new empty database created by a typo and listed as "no studies".
func studyOpenExisting(cmd *cobra.Command, storage string) (*study.DB, error) {
	storage, err := resolveStorageFlag(storage)
	if err != nil {
		return nil, err
	}
	if path, ok := sqliteStoragePath(storage); ok {
		if _, err := os.Stat(path); err != nil {
			return nil, usageErrorf("--storage %q: no study database at %s: %w", storage, path, err)
		}
	}
	return study.Open(cmd.Context(), storage)
}

// sqliteStoragePath returns the file of a SQLite storage URL (sqlite:PATH,
// sqlite:///PATH or a plain path); ok is false for any other scheme.
func sqliteStoragePath(storage string) (string, bool) {
	if strings.HasPrefix(storage, "postgres://") || strings.HasPrefix(storage, "postgresql://") {
		return "", false
	}
	rest, hadScheme := strings.CutPrefix(storage, "sqlite:")
	if !hadScheme && strings.Contains(storage, "://") {
		return "", false
	}
	if strings.HasPrefix(rest, "//") {
		u, err := url.Parse(storage)
		if err != nil {
			return "", false
		}
		rest = u.Path
	}
	return rest, rest != ""
}

func studyOpen(cmd *cobra.Command, storage, name string) (*study.DB, *study.Study, error) {
	db, err := studyOpenExisting(cmd, storage)
	if err != nil {
		return nil, nil, err
	}
	st, err := db.Load(cmd.Context(), name)
	if err != nil {
		db.Close()
		if errors.Is(err, study.ErrNotFound) {
			return nil, nil, usageError(err)
		}
		return nil, nil, err
	}
	return db, st, nil
}

func newStudyLsCmd(storage *string) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "ls",
		Short: "List studies with trial counts per state",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			db, err := studyOpenExisting(cmd, *storage)
			if err != nil {
				return err
			}
			defer db.Close()
			list, err := db.Studies(cmd.Context())
			if err != nil {
				return err
			}
			if asJSON {
				if list == nil {
					list = []study.Summary{}
				}
				return writeJSON(cmd.OutOrStdout(), list)
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tDIRECTIONS\tSAMPLER\tTRIALS\tSTATES\tCREATED")
			for _, s := range list {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\n", s.Name, studyDirectionsText(s.Directions), s.Sampler, s.Trials, studyStatesText(s.States), s.Created.Format(time.RFC3339))
			}
			return tw.Flush()
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print as JSON")
	return cmd
}

// studyView is what spoc study show prints.
type studyView struct {
	Name       string                    `json:"name"`
	Directions []search.Direction        `json:"directions"`
	Sampler    string                    `json:"sampler"`
	Seed       uint64                    `json:"seed"`
	Created    time.Time                 `json:"created"`
	Space      search.Space              `json:"space"`
	States     map[search.TrialState]int `json:"states"`
	Front      []search.Trial            `json:"pareto_front"`
	Trials     []search.Trial            `json:"trials,omitempty"`
}

func newStudyShowCmd(storage *string) *cobra.Command {
	var asJSON, all bool
	cmd := &cobra.Command{
		Use:   "show NAME",
		Short: "Show a study: its space, trial states and Pareto front",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			db, st, err := studyOpen(cmd, *storage, args[0])
			if err != nil {
				return err
			}
			defer db.Close()
			trials, err := st.Trials(cmd.Context())
			if err != nil {
				return err
			}
			v := studyView{Name: st.Name, Directions: st.Directions, Sampler: st.Sampler, Seed: st.Seed, Created: st.Created,
				Space: st.Space, States: map[search.TrialState]int{}, Front: search.ParetoFront(trials, st.Directions)}
			for _, t := range trials {
				v.States[t.State]++
			}
			if all {
				v.Trials = trials
			}
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), v)
			}
			return printStudy(cmd.OutOrStdout(), v)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print as JSON")
	cmd.Flags().BoolVar(&all, "all", false, "list every trial, not only the Pareto front")
	return cmd
}

func newStudyExportCmd(storage *string) *cobra.Command {
	var format, out string
	cmd := &cobra.Command{
		Use:   "export NAME",
		Short: "Export a study's trials as an Optuna-style trials dataframe (CSV or JSON)",
		Long: `Export writes one row per trial with Optuna's trials_dataframe column names
(number, values_N, datetime_start, datetime_complete, duration, params_X,
user_attrs_X, system_attrs_X, constraints, state), so that
pandas.read_csv or Optuna tooling loads the result.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			f, err := study.ParseFormat(format)
			if err != nil {
				return usageError(err)
			}
			db, st, err := studyOpen(cmd, *storage, args[0])
			if err != nil {
				return err
			}
			defer db.Close()
			trials, err := st.Trials(cmd.Context())
			if err != nil {
				return err
			}
			if out == "" || out == "-" {
				return study.Export(cmd.OutOrStdout(), f, st.Directions, trials)
			}
			return writeAtomic(out, func(w io.Writer) error { return study.Export(w, f, st.Directions, trials) })
		},
	}
	cmd.Flags().StringVar(&format, "format", "csv", "csv or json")
	cmd.Flags().StringVarP(&out, "out", "o", "", "output file (default stdout); written to a temporary file and renamed")
	cmd.Flags().StringVar(&out, "output", "", "output file (default stdout)")
	_ = cmd.Flags().MarkDeprecated("output", "use --out")
	return cmd
}
