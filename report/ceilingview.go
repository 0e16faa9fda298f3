package report

import (
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"math"
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
	// IntervalLabel is "95 % confidence" for an estimate, the interval's label
	// (empty otherwise).
	IntervalLabel string
	// Interval explains [Lo, Hi] in a sentence; empty without one, and
	// NoInterval says why.
	Interval, IntervalTitle, NoInterval string
	// Cost says what the precision took; Spread is the spread of one
	// run's verdict over workload seeds; Walk the walk's own ceiling.
	Cost, Spread, Walk string
	// Margin is the walk's binding clause at its ceiling; MarginLabel
	// names it so: "Binding clause", or, when an estimate (whose binding
	// clause the interval names) states the capacity, "Nearest its limit
	// on the walk".
	Margin, MarginLabel string
	Tuned               *tunedView
}

type tunedView struct {
	// Estimated: the rows are capacity estimates (else walk ceilings
	// with seed intervals).
	Estimated   bool
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
	v := &ceilingView{NoInterval: firstNonEmpty(c.NoEstimate, c.NoInterval, "this summary records none")}
	if e := c.Estimate; e != nil {
		estimateView(v, c, e)
	} else if iv := c.CeilingInterval; iv != nil {
		v.Lo, v.Hi = iv.Lo, iv.Hi
		v.Interval = fmt.Sprintf("a sweep with another workload seed finds a ceiling in [%d, %d] users with %.0f %% probability. %s",
			iv.Lo, iv.Hi, 100*iv.Confidence, intervalBasis(iv))
		v.IntervalTitle = fmt.Sprintf("%.0f %% prediction interval over %d workload seeds", 100*iv.Confidence, len(iv.Seeds))
	}
	if m := c.BindingMargin; m != nil {
		v.MarginLabel = "Binding clause"
		if c.Estimate != nil {
			v.MarginLabel = "Nearest its limit on the walk"
		}
		v.Margin = fmt.Sprintf("%s %s was %s at the ceiling against its limit of %s (%s of the limit unused); at %d users it was %s.",
			m.Scope, m.Clause, m.Format(m.AtCeiling), m.Format(m.Limit), fmtPct(m.Headroom),
			c.FirstFailingUsers, m.Format(m.AtFirstFailing))
	}
	if tv := d.TunedVsDefault; tv != nil {
		t := &tunedView{Verdict: tv.Verdict, WithinNoise: tv.WithinNoise, Same: tv.Same}
		for _, r := range []struct {
			name string
			e    plan.CeilingEstimate
		}{{"engine.params (default)", tv.Default}, {fmt.Sprintf("tuned (%s)", choiceName(tv.TunedTrial)), tv.Tuned}} {
			row := tunedRow{Name: r.name, Ceiling: fmt.Sprint(r.e.Users), Interval: "–", Seeds: "–", Source: r.e.Provenance.Source}
			if e := r.e.Estimate; e != nil {
				t.Estimated = true
				row.Ceiling, row.Interval = fmt.Sprint(r.e.Capacity), estimateSpan(e)
				row.Seeds = fmt.Sprintf("%d runs at %d user counts; walk ceiling %d", e.Runs, e.Levels, r.e.Users)
			} else if iv := r.e.Interval; iv != nil {
				row.Interval = fmt.Sprintf("[%d, %d]", iv.Lo, iv.Hi)
				row.Seeds = seedCeilings(iv)
			}
			t.Rows = append(t.Rows, row)
		}
		if df := tv.Difference; df != nil && df.Method == capacity.EstimateDifferenceMethod {
			t.Difference = fmt.Sprintf("%+.1f users, 95 %% confidence interval [%+.1f, %+.1f] (the two estimates taken as independent, each with the standard error its interval implies)%s.",
				df.MeanUsers, df.Lo, df.Hi, map[bool]string{true: ": it contains 0, so the difference is within noise", false: ""}[df.WithinNoise()])
		} else if df != nil {
			t.Difference = fmt.Sprintf("%+d users on the configured seed; %+.1f users on average over %d paired seeds other than the one that chose, 95 %% confidence interval [%+.1f, %+.1f]%s.",
				df.Users, df.MeanUsers, df.Seeds, df.Lo, df.Hi, map[bool]string{true: ": it contains 0, so the difference is within noise", false: ""}[df.WithinNoise()])
		}
		for _, ch := range tv.Changed {
			t.Changed = append(t.Changed, flagRow{Flag: ch.Flag, Default: flagValue(ch.Default, ch.DefaultIsEngineDefault), Tuned: flagValue(ch.Tuned, ch.TunedIsEngineDefault)})
		}
		v.Tuned = t
	}
	return v
}

// estimateView fills v from the capacity estimate e.
func estimateView(v *ceilingView, c plan.Capacity, e *capacity.CapacityEstimate) {
	v.Lo = int(math.Floor(e.Lo))
	v.Hi = int(math.Floor(float64(e.Hi)))
	if !e.Bounded {
		v.Hi = int(math.Floor(e.Users))
	}
	left := ""
	if r := c.Refinement; r != nil && r.NotCounted != "" {
		left = "; not counted: " + r.NotCounted
	}
	v.Interval = fmt.Sprintf("the capacity — the user count at which %s's expected share of requests over its limit reaches the share the clause allows — is %s, from %d runs at %d user counts on fresh workload seeds (a quasi-binomial logistic fit of every run's samples over the limit, with Fieller's interval for its crossing: %s, docs/capacity.md%s).",
		e.Binding, plan.EstimateText(e), e.Runs, e.Levels, e.Method, left)
	v.IntervalTitle = fmt.Sprintf("%.0f %% confidence interval of the capacity", 100*e.Confidence)
	if e.Bounded {
		// the interval's ends follow; a "±" would read as centred
		v.IntervalLabel = fmt.Sprintf("%.0f %% confidence", 100*e.Confidence)
	} else {
		v.IntervalLabel = "unbounded above"
	}
	if r := c.Refinement; r != nil {
		reached := "reached"
		if !r.Reached {
			reached = "not reached (" + r.Stopped + ")"
		}
		kind := "engine time"
		if c.Provenance.Source != capacity.SourceLive {
			kind = "simulated engine time"
		}
		v.Cost = fmt.Sprintf("Precision target ±%.0f %% (sweep.precision): %s, with %d runs in all (%d of them on fresh workload seeds around the knee), %.0f min of %s.",
			100*r.Target, reached, c.Runs, r.Runs, c.EngineSeconds/60, kind)
	}
	if sp := e.SeedSpread; sp != nil {
		v.Spread = fmt.Sprintf("One run with a fresh workload seed passes at %.0f users and fails at %.0f, each with %.1f %% probability (one run's threshold varies by %.1f users, sd): the day-to-day variation headroom must cover, which more measurement does not shrink.",
			math.Floor(sp.Lo), math.Ceil(sp.Hi), 100*(1+e.Confidence)/2, sp.SDUsers)
	}
	v.Walk = fmt.Sprintf("The walk on workload.seed (which chose the configuration) found its ceiling at %d users.", c.Ceiling)
}

// estimateSpan is an estimate's confidence interval, "149–169".
func estimateSpan(e *capacity.CapacityEstimate) string {
	if !e.Bounded {
		return fmt.Sprintf("≥ %.0f", math.Floor(e.Lo))
	}
	return fmt.Sprintf("%.0f–%.0f", math.Floor(e.Lo), math.Floor(float64(e.Hi)))
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
		for _, s := range []string{v.Cost, v.Spread, v.Walk} {
			if s != "" {
				fmt.Fprintf(&b, "%s\n\n", mdEscape(s))
			}
		}
	} else {
		fmt.Fprintf(&b, "No interval: %s.\n\n", mdEscape(v.NoInterval))
	}
	if v.Margin != "" {
		fmt.Fprintf(&b, "**%s:** %s\n\n", v.MarginLabel, mdEscape(v.Margin))
	}
	if t := v.Tuned; t != nil {
		fmt.Fprintf(&b, "## Tuned vs default\n\n%s\n\n", mdEscape(t.Verdict))
		if !t.Same {
			if t.Estimated {
				b.WriteString("| configuration | capacity | 95 % confidence interval | measured by | source |\n|---|---:|---:|---|---|\n")
			} else {
				b.WriteString("| configuration | ceiling | 95 % interval | ceiling per workload seed | source |\n|---|---:|---:|---|---|\n")
			}
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

func firstNonEmpty(ss ...string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}
