package report

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/spoc-project/spoc/plan"
)

// fmtMs prints a latency given in milliseconds with a sensible unit.
func fmtMs(ms float64) string {
	switch {
	case !finite(ms):
		return "–"
	case ms >= 10000:
		return fmt.Sprintf("%.1f s", ms/1000)
	case ms >= 1000:
		return fmt.Sprintf("%.2f s", ms/1000)
	case ms >= 10:
		return fmt.Sprintf("%.0f ms", ms)
	case ms >= 0.1 || ms == 0:
		return fmt.Sprintf("%.1f ms", ms)
	case ms > 0:
		return "< 0.1 ms"
	default:
		return fmt.Sprintf("%.1f ms", ms)
	}
}

// fmtPct prints a ratio of 1 as a percentage.
// fmtPctOrAbsent is fmtPct of *r, or "–" when r is nil: an error that
// could not be computed is absent, never 0.
func fmtPctOrAbsent(r *float64) string {
	if r == nil {
		return "–"
	}
	return fmtPct(*r)
}

func fmtPct(r float64) string {
	if !finite(r) {
		return "–"
	}
	return fmt.Sprintf("%.1f%%", 100*r)
}

// fmtNum prints a count or rate with thousands separators and no decimals
// above 100.
func fmtNum(v float64) string {
	if !finite(v) {
		return "–"
	}
	if math.Abs(v) < 100 && v != math.Trunc(v) {
		return trimZeros(fmt.Sprintf("%.2f", v))
	}
	s := fmt.Sprintf("%.0f", math.Abs(v))
	var b strings.Builder
	if v < 0 {
		b.WriteByte('-')
	}
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteRune(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// fmtValue prints a parameter value: floats with at most three decimals.
func fmtValue(v any) string {
	switch x := v.(type) {
	case float64:
		if x == math.Trunc(x) && math.Abs(x) < 1e15 {
			return fmt.Sprintf("%.0f", x)
		}
		return trimZeros(fmt.Sprintf("%.3f", x))
	case nil:
		return "–"
	default:
		return fmt.Sprint(x)
	}
}

// fmtParams prints params as "k=v" pairs in name order.
func fmtParams(p map[string]any) string {
	keys := sortedKeys(p)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + fmtValue(p[k])
	}
	return strings.Join(parts, ", ")
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// slaClauses lists the enabled SLA clauses as text.
func slaClauses(d *plan.Summary) []string {
	var parts []string
	for _, c := range []struct {
		name string
		pct  float64
		max  fmt.Stringer
		on   bool
	}{
		{"TTFT", d.SLA.TTFT.Percentile, d.SLA.TTFT.Max, d.SLA.TTFT.Max > 0},
		{"ITL", d.SLA.ITL.Percentile, d.SLA.ITL.Max, d.SLA.ITL.Max > 0},
		{"TPOT", d.SLA.TPOT.Percentile, d.SLA.TPOT.Max, d.SLA.TPOT.Max > 0},
		{"E2E", d.SLA.E2E.Percentile, d.SLA.E2E.Max, d.SLA.E2E.Max > 0},
	} {
		if c.on {
			parts = append(parts, fmt.Sprintf("%s p%g ≤ %s", c.name, c.pct, c.max))
		}
	}
	return append(parts, fmt.Sprintf("errors ≤ %g%%", 100*d.SLA.MaxErrorRate))
}

// slaText is the SLA in one line.
func slaText(d *plan.Summary) string { return strings.Join(slaClauses(d), ", ") }

// choice says where the chosen configuration came from.
func choice(c plan.Capacity) string {
	if c.ChosenTrial < 0 {
		return "the configured engine flags (the baseline), which no tuned candidate beat (ties keep the configured flags)"
	}
	return fmt.Sprintf("study trial #%d, chosen by %s", c.ChosenTrial, c.ChosenBy)
}

// ceilingPoint is the sweep point at the ceiling, or nil.
func ceilingPoint(d *plan.Summary) *plan.SweepPoint {
	for i := range d.Sweep {
		if d.Sweep[i].Users == d.Capacity.Users {
			return &d.Sweep[i]
		}
	}
	return nil
}

// measuredHitRate is the prefix-cache hit rate measured at the ceiling: the
// sweep point's, else the telemetry window's; ok is false when neither has
// one.
func measuredHitRate(d *plan.Summary) (rate float64, source string, ok bool) {
	if p := ceilingPoint(d); p != nil && p.PrefixCacheHitRate > 0 {
		return p.PrefixCacheHitRate, fmt.Sprintf("sweep at %d users", p.Users), true
	}
	if t := d.Telemetry; t != nil && t.Engine.PrefixCacheQueries > 0 {
		return t.Engine.PrefixCacheHitRate, "engine telemetry at the ceiling", true
	}
	return 0, "", false
}

// commandLines breaks a command line before each --flag with a shell line
// continuation, so it reads one flag a line and still pastes into a shell.
// A command with quotes or backslashes is left alone: a continuation inside
// quotes would change a value.
func commandLines(cmd string) string {
	if strings.ContainsAny(cmd, "'\"\\`$\n") {
		return cmd
	}
	return strings.ReplaceAll(cmd, " --", " \\\n    --")
}
