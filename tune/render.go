package tune

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spoc-project/spoc/search"
	"github.com/spoc-project/spoc/study"
)

// WriteProgress prints one line per finished trial, its count first:
//
//	trial 7/60 #6 1234 tok/s ttft95 812ms itl95 45.2ms ok front 4
func WriteProgress(w io.Writer, p Progress) error {
	_, err := fmt.Fprintf(w, "trial %d/%d %s\n", p.Finished, p.Total, ProgressLine(p))
	return err
}

// ProgressLine is one finished trial in about 80 columns, without its count
// (a progress renderer shows that with the elapsed time and the ETA): its
// number, the objective values, "ok" when it meets the SLA or "✗" and the
// first failing clause (+N more), the size of the feasible front, and "best"
// when it is the best so far on the first objective. A failed or pruned
// trial shows its state and the first line of its error.
//
//	#16 2326 tok/s ttft95 2035ms itl95 38.91ms ✗ P1 ttft p95 2.04s > 2s +1 front 1
func ProgressLine(p Progress) string {
	var b strings.Builder
	t := p.Trial
	fmt.Fprintf(&b, "#%d", t.Number)
	if src, ok := t.SystemAttrs[study.AttrDuplicateOf]; ok {
		// Not evaluated: its flags configure the engine as #src's did.
		fmt.Fprintf(&b, " (not run: same flags as #%v, result reused)", src)
	}
	switch t.State {
	case search.StateComplete:
		b.WriteString(" " + formatValues(t.Values, p.Objectives))
		if t.Feasible() {
			b.WriteString(" ok")
		} else {
			// The constraints are the worst over profiles while the values
			// printed are overall, so the line names the failing clause
			// from the verdict (which profile) when the trial recorded one.
			detail := violated(t)
			if sla, ok := t.UserAttrs["sla"].(string); ok {
				if clauses, failed := strings.CutPrefix(sla, "fail: "); failed {
					first, rest, more := strings.Cut(clauses, "; ")
					detail = first
					if more {
						detail += fmt.Sprintf(" +%d", strings.Count(rest, "; ")+1)
					}
				}
			}
			if detail == "" {
				detail = "SLA"
			}
			b.WriteString(" ✗ " + detail)
		}
	default:
		fmt.Fprintf(&b, " %s", t.State)
		if msg, ok := t.UserAttrs["error"].(string); ok {
			fmt.Fprintf(&b, " (%s)", firstLine(msg))
		}
	}
	fmt.Fprintf(&b, " front %d", p.FrontSize)
	if p.Best != nil && p.Best.Number == t.Number {
		b.WriteString(" best")
	}
	return b.String()
}

// shortMetric names a metric in a progress line: a throughput by its unit
// alone (tok/s, req/s), a latency percentile as ttft95.
func shortMetric(m string) string {
	switch m {
	case "output_throughput", "request_throughput":
		return ""
	case "total_throughput":
		return "total"
	}
	return strings.Replace(m, "_p", "", 1)
}

func formatValues(values []float64, objs []search.ObjectiveSpec) string {
	parts := make([]string, 0, len(values))
	for i, v := range values {
		if i >= len(objs) {
			break
		}
		name, unit := shortMetric(objs[i].Metric), Unit(objs[i].Metric)
		part := fmtNum(v)
		switch {
		case unit == "ms" && v >= 1000:
			part = fmtNum(v/1000) + "s"
		case unit == "ms":
			part += unit
		case unit != "":
			part += " " + unit
		}
		if name != "" {
			part = name + " " + part
		}
		parts = append(parts, part)
	}
	return strings.Join(parts, " ")
}

// fmtNum prints 4 significant figures, without exponent for usual values.
func fmtNum(v float64) string {
	switch {
	case v == 0:
		return "0"
	case v >= 1000 || v <= -1000:
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.4g", v)
}

// violated names the violated constraints of t from its recorded names.
func violated(t search.Trial) string {
	var names []string
	switch v := t.UserAttrs["constraint_names"].(type) {
	case []string:
		names = v
	case []any:
		for _, x := range v {
			s, _ := x.(string)
			names = append(names, s)
		}
	}
	var out []string
	for i, c := range t.Constraints {
		if c <= 0 {
			continue
		}
		name := fmt.Sprintf("constraint %d", i)
		if i < len(names) && names[i] != "" {
			name = names[i]
		}
		out = append(out, fmt.Sprintf("%s by %.0f%%", name, 100*c))
	}
	return strings.Join(out, ", ")
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

// WriteFront prints the Pareto front as a table, one row per trial sorted by
// the first objective, with the trial's searched parameters.
func WriteFront(w io.Writer, r *Result, space []string) error {
	tw := tabwriter.NewWriter(w, 2, 8, 2, ' ', 0)
	head := []string{"trial"}
	for _, o := range r.Objectives {
		head = append(head, fmt.Sprintf("%s (%s, %s)", o.Metric, Unit(o.Metric), o.Direction[:3]))
	}
	head = append(head, space...)
	fmt.Fprintln(tw, strings.Join(head, "\t"))
	front := SortedFront(r)
	for _, t := range front {
		row := []string{fmt.Sprintf("#%d", t.Number)}
		for _, v := range t.Values {
			row = append(row, fmtNum(v))
		}
		for _, name := range space {
			row = append(row, fmtParam(t.Params[name]))
		}
		fmt.Fprintln(tw, strings.Join(row, "\t"))
	}
	return tw.Flush()
}

// SortedFront returns the Pareto front ordered best first on the first
// objective.
func SortedFront(r *Result) []search.Trial {
	front := append([]search.Trial(nil), r.Front...)
	if len(r.Directions) == 0 {
		return front
	}
	key := func(t search.Trial) float64 { return search.Oriented(t.Values[:1], r.Directions[:1])[0] }
	for i := 1; i < len(front); i++ {
		for j := i; j > 0 && key(front[j]) < key(front[j-1]); j-- {
			front[j], front[j-1] = front[j-1], front[j]
		}
	}
	return front
}

// fmtParam prints a parameter value; floats with 3 significant figures.
func fmtParam(v any) string {
	if f, ok := v.(float64); ok {
		return fmt.Sprintf("%.3g", f)
	}
	return fmt.Sprint(v)
}
