package cli

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/spoc-project/spoc/telemetry"
)

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
			from, to, err := parseWindowFlags(start, end, time.Now())
			if err != nil {
				return err
			}
			dopts, err := derive.options()
			if err != nil {
				return err
			}
			q, err := parseQueries(queries)
			if err != nil {
				return err
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

// parseWindowFlags reads --start and --end; the end must come after the
// start.
func parseWindowFlags(start, end string, now time.Time) (from, to time.Time, err error) {
	if from, err = parseTimeFlag("--start", start, now); err != nil {
		return
	}
	if to, err = parseTimeFlag("--end", end, now); err != nil {
		return
	}
	if !to.After(from) {
		err = usageErrorf("--end (%s) must be after --start (%s)", to.Format(time.RFC3339), from.Format(time.RFC3339))
	}
	return
}

// parseQueries reads --query METRIC=PROMQL overrides of the catalog.
func parseQueries(queries []string) (telemetry.Queries, error) {
	q := telemetry.Queries{}
	for _, s := range queries {
		name, expr, ok := strings.Cut(s, "=")
		if !ok {
			return nil, usageErrorf("--query %q: want METRIC=PROMQL", s)
		}
		q[name] = expr
	}
	if err := q.Validate(); err != nil {
		return nil, usageError(fmt.Errorf("--query: %w", err))
	}
	return q, nil
}
