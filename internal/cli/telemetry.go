package cli

import (
	"context"
	"fmt"
	"strconv"
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
			if len(targets) == 0 {
				return usageErrorf("telemetry scrape needs at least one --target NAME=URL")
			}
			if duration <= 0 {
				return usageErrorf("--duration must be positive")
			}
			if interval <= 0 {
				return usageErrorf("--interval must be positive")
			}
			dopts, err := derive.options()
			if err != nil {
				return err
			}
			var ts []telemetry.Target
			for _, s := range targets {
				t, err := telemetry.ParseTarget(s)
				if err != nil {
					return usageError(err)
				}
				ts = append(ts, t)
			}
			opts := telemetry.Options{Derive: dopts}
			var file *atomicfile.File
			if out != "" {
				if file, err = atomicfile.Create(out); err != nil {
					return err
				}
				defer file.Abort()
				opts.JSONL = file
			}
			c, err := telemetry.NewCollector(ts, interval, opts)
			if err != nil {
				return usageError(err)
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), duration)
			defer cancel()
			start := time.Now()
			runErr := c.Run(ctx)
			end := time.Now()
			if file != nil {
				if err := file.Commit(); err != nil {
					return err
				}
			}
			if runErr != nil {
				return fmt.Errorf("telemetry scrape: %w", runErr)
			}
			sig := c.Window(start, end)
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

func newTelemetryQueryCmd() *cobra.Command {
	var (
		promURL    string
		start, end string
		step       time.Duration
		selector   string
		queries    []string
		asJSON     bool
		derive     deriveFlags
	)
	cmd := &cobra.Command{
		Use:   "query --prometheus URL --start T --end T",
		Short: "Derive a window's signals from an existing Prometheus server",
		Long: "Fetch every catalog metric over [start, end] with query_range and derive the same\n" +
			"signals as a direct scrape. Times are RFC 3339, Unix seconds, \"now\", or a negative\n" +
			"duration from now (-15m). --query METRIC=PROMQL replaces the query of one catalog\n" +
			"metric (see `spoc telemetry catalog`); an empty PROMQL leaves the metric out.",
		Example: "  spoc telemetry query --prometheus http://prometheus:9090 --start -30m --end now \\\n" +
			"    --query 'vllm:num_requests_running=vllm:num_requests_running{namespace=\"llm\"}'",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if promURL == "" {
				return usageErrorf("telemetry query needs --prometheus URL")
			}
			now := time.Now()
			from, err := parseTimeFlag("--start", start, now)
			if err != nil {
				return err
			}
			to, err := parseTimeFlag("--end", end, now)
			if err != nil {
				return err
			}
			if !to.After(from) {
				return usageErrorf("--end (%s) must be after --start (%s)", to.Format(time.RFC3339), from.Format(time.RFC3339))
			}
			dopts, err := derive.options()
			if err != nil {
				return err
			}
			q := telemetry.Queries{}
			for _, s := range queries {
				name, expr, ok := strings.Cut(s, "=")
				if !ok {
					return usageErrorf("--query %q: want METRIC=PROMQL", s)
				}
				q[name] = expr
			}
			if err := q.Validate(); err != nil {
				return usageError(fmt.Errorf("--query: %w", err))
			}
			st, err := telemetry.QueryRange(cmd.Context(), promURL, from, to, telemetry.QueryOptions{Step: step, Selector: selector, Queries: q})
			if err != nil {
				return err
			}
			sig := st.Window(from, to, dopts)
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), sig)
			}
			return telemetry.WriteText(cmd.OutOrStdout(), sig)
		},
	}
	cmd.Flags().StringVar(&promURL, "prometheus", "", "base URL of the Prometheus server")
	cmd.Flags().StringVar(&start, "start", "", "window start")
	cmd.Flags().StringVar(&end, "end", "now", "window end")
	cmd.Flags().DurationVar(&step, "step", telemetry.DefaultInterval, "query resolution (widened to stay under 11000 points)")
	cmd.Flags().StringVar(&selector, "selector", "", "label matchers added to every default query, e.g. 'namespace=\"llm\"'")
	cmd.Flags().StringArrayVar(&queries, "query", nil, "METRIC=PROMQL overriding one catalog metric's query (repeatable)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the signals as JSON")
	derive.register(cmd)
	_ = cmd.MarkFlagRequired("start")
	return cmd
}

func newTelemetryCatalogCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "catalog",
		Short: "List the metrics spoc reads, their older names and default PromQL",
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
				if len(m.Aliases) > 0 {
					fmt.Fprintf(w, "  older names: %s\n", strings.Join(m.Aliases, ", "))
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
// relative to now.
func parseTimeFlag(flag, s string, now time.Time) (time.Time, error) {
	s = strings.TrimSpace(s)
	switch {
	case s == "":
		return time.Time{}, usageErrorf("%s is required", flag)
	case s == "now":
		return now, nil
	case strings.HasPrefix(s, "-"):
		if d, err := time.ParseDuration(s); err == nil {
			return now.Add(d), nil
		}
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	if f, err := strconv.ParseFloat(s, 64); err == nil && f > 0 {
		sec := int64(f)
		return time.Unix(sec, int64((f-float64(sec))*1e9)).UTC(), nil
	}
	return time.Time{}, usageErrorf("%s %q: want RFC 3339 (2026-11-30T04:00:00Z), Unix seconds, \"now\" or a negative duration (-15m)", flag, s)
}

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
