package report

import (
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"strings"

	"github.com/spoc-project/spoc/capacity"
	"github.com/spoc-project/spoc/plan"
)

// The ceiling's interval, the binding clause's margin and the tuned vs
// default comparison have their own template blocks and view, reading
// plan.Summary.Capacity and plan.Summary.TunedVsDefault only.

//go:embed ceiling.html.tmpl
var ceilingHTML string

var _ = template.Must(pageTemplate.Funcs(template.FuncMap{"ceilingView": newCeilingView}).Parse(ceilingHTML))

// ceilingView is the ceiling's evidence, every figure formatted.
type ceilingView struct {
	Lo, Hi int
	// Interval explains [Lo, Hi] in a sentence; empty without one, and
	// NoInterval says why.
	Interval, IntervalTitle, NoInterval string
	Margin                              string
	Tuned                               *tunedView
}

type tunedView struct {
	Verdict     string
	WithinNoise bool
	Same        bool
	Rows        []tunedRow
	Difference  string
	Changed     []flagRow
}

type tunedRow struct{ Name, Ceiling, Interval, Seeds, Source string }

type flagRow struct{ Flag, Default, Tuned string }

func newCeilingView(d *plan.Summary) *ceilingView {
	if d == nil || d.Capacity.Users == 0 && d.Capacity.CeilingInterval == nil {
		return nil
	}
	c := d.Capacity
	v := &ceilingView{NoInterval: c.NoInterval}
	if v.NoInterval == "" {
		v.NoInterval = "this summary records none"
	}
	if iv := c.CeilingInterval; iv != nil {
		v.Lo, v.Hi = iv.Lo, iv.Hi
		v.Interval = fmt.Sprintf("a sweep with another workload seed finds a ceiling in [%d, %d] users with %.0f %% probability. %s",
			iv.Lo, iv.Hi, 100*iv.Confidence, intervalBasis(iv))
		v.IntervalTitle = fmt.Sprintf("%.0f %% prediction interval over %d workload seeds", 100*iv.Confidence, len(iv.Seeds))
	}
	if m := c.BindingMargin; m != nil {
		v.Margin = fmt.Sprintf("%s %s was %s at the ceiling against its limit of %s (%s of the limit unused); at %d users it was %s.",
			m.Scope, m.Clause, clauseValue(m.Clause, m.AtCeiling), clauseValue(m.Clause, m.Limit), fmtPct(m.Headroom),
			c.FirstFailingUsers, clauseValue(m.Clause, m.AtFirstFailing))
	}
	if tv := d.TunedVsDefault; tv != nil {
		t := &tunedView{Verdict: tv.Verdict, WithinNoise: tv.WithinNoise, Same: tv.Same}
		for _, r := range []struct {
			name string
			e    plan.CeilingEstimate
		}{{"engine.params (default)", tv.Default}, {fmt.Sprintf("tuned (%s)", choiceName(tv.TunedTrial)), tv.Tuned}} {
			row := tunedRow{Name: r.name, Ceiling: fmt.Sprint(r.e.Users), Interval: "–", Seeds: "–", Source: r.e.Provenance.Source}
			if iv := r.e.Interval; iv != nil {
				row.Interval = fmt.Sprintf("[%d, %d]", iv.Lo, iv.Hi)
				row.Seeds = seedCeilings(iv)
			}
			t.Rows = append(t.Rows, row)
		}
		if df := tv.Difference; df != nil {
			t.Difference = fmt.Sprintf("%+d users on the configured seed; %+.1f users on average over %d paired seeds, 95 %% confidence interval [%+.1f, %+.1f]%s.",
				df.Users, df.MeanUsers, df.Seeds, df.Lo, df.Hi, map[bool]string{true: ": it contains 0, so the difference is within noise", false: ""}[df.WithinNoise()])
		}
		for _, ch := range tv.Changed {
			t.Changed = append(t.Changed, flagRow{Flag: ch.Flag, Default: flagValue(ch.Default, ch.DefaultIsEngineDefault), Tuned: flagValue(ch.Tuned, ch.TunedIsEngineDefault)})
		}
		v.Tuned = t
	}
	return v
}

// flagValue is the value a configuration runs a flag with; one it left
// unset is the engine's default, shown with its value when the summary
// records it (older summaries do not).
func flagValue(v any, engineDefault bool) string {
	switch {
	case v == nil:
		return "engine default"
	case engineDefault:
		return fmt.Sprint(v) + " (engine default)"
	}
	return fmt.Sprint(v)
}

func choiceName(trial int) string {
	if trial < 0 {
		return "engine.params"
	}
	return fmt.Sprintf("trial #%d", trial)
}

// intervalBasis says what the interval was computed from.
func intervalBasis(iv *capacity.Interval) string {
	return fmt.Sprintf("From %d sweeps, one per workload seed (ceilings %s; mean bracket midpoint %.1f, standard deviation %.1f users): the Student-t prediction interval (%s, docs/capacity.md).",
		len(iv.Seeds), seedCeilings(iv), iv.MeanUsers, iv.StdDevUsers, iv.Method)
}

func seedCeilings(iv *capacity.Interval) string {
	parts := make([]string, len(iv.Seeds))
	for i, s := range iv.Seeds {
		parts[i] = fmt.Sprint(s.Ceiling)
	}
	return strings.Join(parts, ", ")
}

// clauseValue prints a clause's value: seconds for a latency, a percentage
// for the error rate.
func clauseValue(clause string, v float64) string {
	if clause == "error_rate" {
		return fmtPct(v)
	}
	return fmt.Sprintf("%.2f s", v)
}

// writeCeilingMarkdown writes the interval, the margin and the tuned vs
// default comparison to summary.md.
func writeCeilingMarkdown(w io.Writer, d *plan.Summary) {
	v := newCeilingView(d)
	if v == nil {
		return
	}
	var b strings.Builder
	if v.Interval != "" {
		fmt.Fprintf(&b, "**Interval:** %s\n\n", mdEscape(v.Interval))
	} else {
		fmt.Fprintf(&b, "No interval: %s.\n\n", mdEscape(v.NoInterval))
	}
	if v.Margin != "" {
		fmt.Fprintf(&b, "**Binding clause:** %s\n\n", mdEscape(v.Margin))
	}
	if t := v.Tuned; t != nil {
		fmt.Fprintf(&b, "## Tuned vs default\n\n%s\n\n", mdEscape(t.Verdict))
		if !t.Same {
			b.WriteString("| configuration | ceiling | 95 % interval | ceiling per workload seed | source |\n|---|---:|---:|---|---|\n")
			for _, r := range t.Rows {
				fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", mdEscape(r.Name), r.Ceiling, r.Interval, r.Seeds, mdEscape(r.Source))
			}
			if t.Difference != "" {
				fmt.Fprintf(&b, "\nDifference (tuned − default): %s\n", mdEscape(t.Difference))
			}
			if len(t.Changed) > 0 {
				b.WriteString("\n| flag | engine.params | tuned |\n|---|---|---|\n")
				for _, c := range t.Changed {
					fmt.Fprintf(&b, "| `%s` | %s | %s |\n", c.Flag, mdEscape(c.Default), mdEscape(c.Tuned))
				}
			}
		}
		b.WriteString("\n")
	}
	io.WriteString(w, b.String())
}
