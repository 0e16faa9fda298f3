package cli

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/spoc-project/spoc/internal/atomicfile"
	"github.com/spoc-project/spoc/telemetry"
)

func init() { register(newTelemetryCmd) }

func newTelemetryCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "telemetry",
		Short: "Collect vLLM and GPU (DCGM) metrics and derive the signals of a run window",
	}
	cmd.AddCommand(newTelemetryScrapeCmd(), newTelemetryQueryCmd(), newTelemetryCatalogCmd())
	return cmd
}

// deriveFlags are the straggler settings both subcommands share.
type deriveFlags struct {
	clockDrop float64
	tpSize    int
}

func (d *deriveFlags) register(cmd *cobra.Command) {
	cmd.Flags().Float64Var(&d.clockDrop, "clock-drop", telemetry.DefaultClockFraction, "flag a GPU whose SM clock is this fraction below its tensor-parallel peers' median")
	cmd.Flags().IntVar(&d.tpSize, "tp-size", 0, "GPUs per tensor-parallel group on a node (0: the whole node)")
}

func (d *deriveFlags) options() (telemetry.DeriveOptions, error) {
	if d.clockDrop <= 0 || d.clockDrop >= 1 {
		return telemetry.DeriveOptions{}, usageErrorf("--clock-drop must be in (0, 1), got %v", d.clockDrop)
	}
	if d.tpSize < 0 {
		return telemetry.DeriveOptions{}, usageErrorf("--tp-size must not be negative, got %d", d.tpSize)
	}
	return telemetry.DeriveOptions{ClockFraction: d.clockDrop, TPSize: d.tpSize}, nil
}

func newTelemetryScrapeCmd() *cobra.Command {
	var (
		targets  []string
		duration time.Duration
		interval time.Duration
		out      string
		asJSON   bool
		derive   deriveFlags
	)
	cmd := &cobra.Command{
		Use:   "scrape --target NAME=URL ... --duration D",
		Short: "Scrape Prometheus endpoints (vLLM /metrics, dcgm-exporter) for a while and summarise",
		Long: "Scrape every target each interval for the given duration, optionally writing every\n" +
			"scrape to a telemetry.jsonl file, then print the window's derived signals. A target\n" +
			"that fails is reported and leaves a gap; the others go on. When no target answered\n" +
			"a single scrape, the signals are printed and the command exits 1.",
		Example: "  spoc telemetry scrape --target vllm=http://localhost:8000/metrics \\\n" +
			"    --target dcgm=http://localhost:9400/metrics --duration 2m --out telemetry.jsonl",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			dopts, err := derive.options()
			if err != nil {
				return err
			}
			ts, err := parseTargets(targets)
			if err != nil {
				return err
			}
			c, sig, err := scrapeTelemetry(cmd.Context(), ts, interval, duration, out, telemetry.Options{Derive: dopts})
			if err != nil {
				return err
			}
			if asJSON {
				err = writeJSON(cmd.OutOrStdout(), sig)
			} else {
				err = telemetry.WriteText(cmd.OutOrStdout(), sig)
			}
			if err != nil {
				return err
			}
			if err := cmd.Context().Err(); err != nil {
				return err // interrupted: what was collected is printed and saved
			}
			return noTargetAnswered(ts, c)
		},
	}
	cmd.Flags().StringArrayVar(&targets, "target", nil, "endpoint to scrape as NAME=URL (repeatable)")
	cmd.Flags().DurationVar(&duration, "duration", 0, "how long to scrape")
	cmd.Flags().DurationVar(&interval, "interval", telemetry.DefaultInterval, "time between scrapes")
	cmd.Flags().StringVarP(&out, "out", "o", "", "write every scrape to this telemetry.jsonl file")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the signals as JSON")
	derive.register(cmd)
	return cmd
}

func newTelemetryCatalogCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "catalog",
		Short: "List the metrics spoc reads, their roles, older and other engines' names and default PromQL",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cat := telemetry.Catalog()
			q := telemetry.DefaultQueries()
			if asJSON {
				type entry struct {
					telemetry.Metric
					Query string `json:"query"`
				}
				out := make([]entry, len(cat))
				for i, m := range cat {
					out[i] = entry{m, q[m.Name]}
				}
				return writeJSON(cmd.OutOrStdout(), out)
			}
			w := cmd.OutOrStdout()
			for _, m := range cat {
				fmt.Fprintf(w, "%-36s %-9s %-8s %s\n", m.Name, m.Kind, m.Unit, m.Help)
				if m.Role != "" {
					fmt.Fprintf(w, "  role: %s (the key of engine.generic.metrics)\n", m.Role)
				}
				if len(m.Aliases) > 0 {
					fmt.Fprintf(w, "  older names: %s\n", strings.Join(m.Aliases, ", "))
				}
				if len(m.Foreign) > 0 {
					fmt.Fprintf(w, "  other engines' names: %s\n", strings.Join(m.Foreign, ", "))
				}
				fmt.Fprintf(w, "  query: %s\n", q[m.Name])
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print as JSON")
	return cmd
}

// parseTimeFlag reads RFC 3339, Unix seconds, "now" or a negative duration

// noTargetAnswered fails a scrape in which no target ever answered: every
// scrape of every target failed (a wrong port, a server not started), so
// the all-zero signals printed above measure nothing. One target failing
// while others answer stays a reported gap.
func noTargetAnswered(targets []telemetry.Target, c *telemetry.Collector) error {
	if len(c.Series()) > 0 {
		return nil
	}
	first := map[string]string{}
	for _, g := range c.Gaps() {
		if _, ok := first[g.Target]; !ok {
			first[g.Target] = g.Error
		}
	}
	msgs := make([]string, 0, len(targets))
	for _, t := range targets {
		e, ok := first[t.Name]
		if !ok {
			return nil // answered with an empty exposition: not a failure
		}
		msgs = append(msgs, e)
	}
	return fmt.Errorf("telemetry scrape: no target answered: %s", strings.Join(msgs, "; "))
}

// scrapeTelemetry scrapes targets every interval for duration (or until
// ctx ends), writing every scrape to out when it is set, and returns the
// collector with the window's signals.
func scrapeTelemetry(ctx context.Context, ts []telemetry.Target, interval, duration time.Duration, out string, opts telemetry.Options) (*telemetry.Collector, telemetry.Signals, error) {
	if duration <= 0 {
		return nil, telemetry.Signals{}, usageErrorf("--duration must be positive")
	}
	if interval <= 0 {
		return nil, telemetry.Signals{}, usageErrorf("--interval must be positive")
	}
	var file *atomicfile.File
	var err error
	if out != "" {
		if file, err = atomicfile.Create(out); err != nil {
			return nil, telemetry.Signals{}, err
		}
		defer file.Abort()
		opts.JSONL = file
	}
	c, err := telemetry.NewCollector(ts, interval, opts)
	if err != nil {
		return nil, telemetry.Signals{}, usageError(err)
	}
	sctx, cancel := context.WithTimeout(ctx, duration)
	defer cancel()
	start := time.Now()
	runErr := c.Run(sctx)
	end := time.Now()
	if file != nil {
		if err := file.Commit(); err != nil {
			return nil, telemetry.Signals{}, err
		}
	}
	if runErr != nil {
		return nil, telemetry.Signals{}, fmt.Errorf("telemetry scrape: %w", runErr)
	}
	return c, c.Window(start, end), nil
}

// parseTargets reads --target NAME=URL; there must be one.
func parseTargets(targets []string) ([]telemetry.Target, error) {
	if len(targets) == 0 {
		return nil, usageErrorf("telemetry scrape needs at least one --target NAME=URL")
	}
	var ts []telemetry.Target
	for _, s := range targets {
		t, err := telemetry.ParseTarget(s)
		if err != nil {
			return nil, usageError(err)
		}
		ts = append(ts, t)
	}
	return ts, nil
}
