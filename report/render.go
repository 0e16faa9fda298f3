package report

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// JSON writes d as indented JSON (summary.json).
func JSON(w io.Writer, d *Data) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(d)
}

// Markdown writes the plan's verdict and key tables as Markdown
// (summary.md): readable in a terminal, a pull request or a wiki.
func Markdown(w io.Writer, d *Data) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# %s\n\n", mdEscape(d.Title))
	c := d.Capacity
	fmt.Fprintf(&b, "**Capacity ceiling: %d concurrent users** of this workload on %d× %s (%s, TP %d)", c.Users, d.Engine.GPUs, mdEscape(d.Engine.GPU), mdEscape(d.Engine.Model), d.Engine.TensorParallelSize)
	if d.Engine.Kind == "sim" {
		b.WriteString(", simulated")
	}
	b.WriteString(".\n\n")
	if c.FirstFailingUsers > 0 {
		fmt.Fprintf(&b, "Above it, at %d users, the SLA fails first on: %s.\n\n", c.FirstFailingUsers, mdEscape(c.FailedClause))
	}
	fmt.Fprintf(&b, "Chosen configuration (%s):\n\n```\n%s\n```\n\n", mdEscape(choice(c)), c.ServeCommand)
	fmt.Fprintf(&b, "SLA (%s): %s\n\n", d.SLA.Scope, slaText(d))
	if len(d.Sweep) > 0 {
		b.WriteString("## Sweep\n\n| users | verdict | output tok/s | TTFT p95 ms | ITL p95 ms | KV usage | prefix hits |\n|---:|---|---:|---:|---:|---:|---:|\n")
		for _, s := range d.Sweep {
			v := "pass"
			if !s.Pass {
				v = "fail: " + mdEscape(s.FailedClause)
			}
			fmt.Fprintf(&b, "| %d | %s | %.0f | %.0f | %.1f | %.1f%% | %.1f%% |\n", s.Users, v, s.OutputThroughput, s.TTFTP95Ms, s.ITLP95Ms, 100*s.KVCacheUsageMean, 100*s.PrefixCacheHitRate)
		}
		b.WriteString("\n")
	}
	if len(d.Compare) > 0 {
		b.WriteString("## Hardware comparison\n\n| target | GPUs | ceiling | users/GPU | ratio |\n|---|---:|---:|---:|---:|\n")
		for _, r := range d.Compare {
			fmt.Fprintf(&b, "| %s | %d× %s | %d | %.1f | %.2f |\n", mdEscape(r.Name), r.GPUs, mdEscape(r.GPU), r.Users, r.UsersPerGPU, r.Ratio)
		}
		b.WriteString("\n")
	}
	if len(d.Assumptions) > 0 {
		b.WriteString("## Assumptions\n\n| field | value | note |\n|---|---|---|\n")
		for _, a := range d.Assumptions {
			fmt.Fprintf(&b, "| `%s` | %s | %s |\n", a.Field, mdEscape(a.Value), mdEscape(a.Note))
		}
		b.WriteString("\n")
	}
	for _, n := range d.Notes {
		fmt.Fprintf(&b, "> %s\n\n", mdEscape(n))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func choice(c Capacity) string {
	if c.ChosenTrial < 0 {
		return "the configured engine flags beat every tuned candidate"
	}
	return fmt.Sprintf("study trial #%d, chosen by %s", c.ChosenTrial, c.ChosenBy)
}

func slaText(d *Data) string {
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
	parts = append(parts, fmt.Sprintf("errors ≤ %g%%", 100*d.SLA.MaxErrorRate))
	return strings.Join(parts, ", ")
}

var mdReplacer = strings.NewReplacer("|", "\\|", "<", "&lt;", ">", "&gt;", "`", "\\`", "*", "\\*", "_", "\\_")

func mdEscape(s string) string { return mdReplacer.Replace(s) }
