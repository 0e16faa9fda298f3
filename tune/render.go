package tune

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spoc-project/spoc/search"
	"github.com/spoc-project/spoc/study"
)

// WriteProgress prints one line per finished trial:
//
//	trial 7/60 #6 COMPLETE output_throughput=1234 tok/s ttft_p95=812 ms itl_p95=45.2 ms feasible | front 4 | best #5 output_throughput=1501 tok/s
func WriteProgress(w io.Writer, p Progress) error {
	var b strings.Builder
	t := p.Trial
	fmt.Fprintf(&b, "trial %d/%d #%d %s", p.Finished, p.Total, t.Number, t.State)
	if src, ok := t.SystemAttrs[study.AttrDuplicateOf]; ok {
		// Not evaluated: its flags configure the engine as #src's did.
		fmt.Fprintf(&b, " (not run: same engine configuration as #%v, result reused)", src)
	}
	switch t.State {
	case search.StateComplete:
		b.WriteString(" " + formatValues(t.Values, p.Objectives))
		if t.Feasible() {
			b.WriteString(" feasible")
		} else {
			detail := violated(t)
			// The constraints are the worst over profiles while the values
			// printed are overall, so "ttft_p95=1501 ms violates SLA (ttft
			// p95 ≤ 2s …)" needs the verdict saying which profile failed.
			if sla, ok := t.UserAttrs["sla"].(string); ok {
				if clause, failed := strings.CutPrefix(sla, "fail: "); failed {
					detail += ": " + clause
				}
			}
			fmt.Fprintf(&b, " violates SLA (%s)", detail)
		}
	default:
		if msg, ok := t.UserAttrs["error"].(string); ok {
			fmt.Fprintf(&b, " (%s)", firstLine(msg))
		}
	}
	fmt.Fprintf(&b, " | front %d", p.FrontSize)
	if p.Best != nil && len(p.Objectives) > 0 {
		fmt.Fprintf(&b, " | best #%d %s", p.Best.Number, formatValues(p.Best.Values[:1], p.Objectives[:1]))
	}
	b.WriteByte('\n')
	_, err := io.WriteString(w, b.String())
	return err
}

func formatValues(values []float64, objs []search.ObjectiveSpec) string {
	parts := make([]string, 0, len(values))
	for i, v := range values {
		if i >= len(objs) {
			break
		}
		parts = append(parts, fmt.Sprintf("%s=%s %s", objs[i].Metric, fmtNum(v), Unit(objs[i].Metric)))
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
