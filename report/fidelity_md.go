package report

import (
	"fmt"
	"sort"
	"strings"

	"github.com/spoc-project/spoc/plan"
)

// writeFidelityMarkdown is the fidelity section of summary.md: where the
// plan spent engine time, the fitted correction and its errors, every
// verified point predicted against measured, and the final ceiling's
// provenance. A simulated plan gets one line; a summary without the
// section (written before it existed) gets none.
func writeFidelityMarkdown(b *strings.Builder, f *plan.FidelityReport) {
	v := newFidelityView(f)
	if v == nil {
		return
	}
	fmt.Fprintf(b, "## Fidelity: %s\n\n%s\n\n", mdEscape(v.Mode), mdEscape(v.Lead))
	if v.Final != "" {
		fmt.Fprintf(b, "%s\n\n", mdEscape(v.Final))
	}
	if v.Correction != "" {
		fmt.Fprintf(b, "%s %s\n\n", mdEscape(v.Correction), mdEscape(v.Errors))
	}
	if len(v.Terms) > 0 {
		b.WriteString("| term | value | identified by the runs | error rise when moved |\n|---|---:|---|---:|\n")
		for _, t := range v.Terms {
			fmt.Fprintf(b, "| %s | %s | %s | %s |\n", mdEscape(t.Name), mdEscape(t.Value), mdEscape(t.Identified), mdEscape(t.Rise))
		}
		b.WriteString("\n")
	}
	if len(v.Probes) > 0 {
		b.WriteString("| probe | users | flags | live TTFT p50 / p95 | live ITL p50 / p95 | prefix-cache hits live / simulated | built-in model | calibrated |\n|---:|---:|---|---:|---:|---:|---|---|\n")
		for i, p := range v.Probes {
			fmt.Fprintf(b, "| %d | %d | %s | %s | %s | %s | %s | %s |\n", i+1, p.Users, mdEscape(p.Flags), p.LiveTTFT, p.LiveITL, p.Hits, mdEscape(p.Uncalibrated), mdEscape(p.Calibrated))
		}
		b.WriteString("\n")
	}
	if len(v.Verified) > 0 {
		b.WriteString("Predicted vs measured (live):\n\n| round | configuration | users | predicted | measured | agree |\n|---:|---|---:|---|---|---|\n")
		for _, p := range v.Verified {
			fmt.Fprintf(b, "| %d | %s | %d | %s | %s | %s |\n", p.Round, mdEscape(p.Config), p.Users, mdEscape(p.Predicted), mdEscape(p.Measured), p.Agree)
		}
		b.WriteString("\n")
	}
	if len(f.EngineSeconds) > 0 {
		names := make([]string, 0, len(f.EngineSeconds))
		for n := range f.EngineSeconds {
			names = append(names, n)
		}
		sort.Strings(names)
		b.WriteString("| phase | engine-seconds | server starts |\n|---|---:|---:|\n")
		for _, n := range names {
			fmt.Fprintf(b, "| %s | %.1f | %d |\n", mdEscape(n), f.EngineSeconds[n], f.EngineStarts[n])
		}
		b.WriteString("\n")
	}
	if v.Totals != "" {
		fmt.Fprintf(b, "%s\n\n", mdEscape(v.Totals))
	}
}
