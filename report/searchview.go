package report

import (
	"fmt"
	"html/template"
	"math"
	"strings"

	"github.com/spoc-project/spoc/plan"
)

// searchView is the Search section: objective projections, the front,
// hypervolume, influence and the candidates' short sweeps.
type searchView struct {
	Objectives  []objView
	Projections []template.HTML
	// FrontLabel names what Front holds: the feasible Pareto front, or the
	// non-dominated trials when no trial met the SLA during the search.
	FrontLabel  string
	Feasible    bool
	Front       []frontRow
	Hypervolume template.HTML
	Influence   []influenceRow
	Candidates  template.HTML
	Complete    int
	// ParamNames are the front table's parameter columns.
	ParamNames []string
}

type frontRow struct {
	Number, Generation int
	Values             []string
	Params             []string
	Chosen             bool
}

type influenceRow struct {
	Param, Doc string
	Cells      []influenceCell
}

type influenceCell struct {
	Value float64
	Style template.CSS
	Set   bool
}

// objView is an objective as displayed: latencies in ms, or in s when the
// trials reach ten seconds.
type objView struct {
	plan.Objective
	Seconds bool
}

// value returns a trial's value in the display unit.
func (o objView) value(v float64) float64 {
	if o.Unit == "s" {
		v *= 1000
	}
	if o.Seconds {
		v /= 1000
	}
	return v
}

// unit is the display unit.
func (o objView) unit() string {
	switch {
	case o.Seconds:
		return "s"
	case o.Unit == "s":
		return "ms"
	}
	return o.Unit
}

// displayObjectives returns the objectives to display: latencies whose
// trials reach 10 s are shown in seconds.
func displayObjectives(objs []plan.Objective, done []plan.Member) []objView {
	out := make([]objView, len(objs))
	for k, o := range objs {
		out[k] = objView{Objective: o}
		if o.Unit != "ms" && o.Unit != "s" {
			continue
		}
		peak := 0.0
		for _, m := range done {
			peak = max(peak, out[k].value(m.Values[k]))
		}
		out[k].Seconds = peak >= 10000
	}
	return out
}

// fmtObjective prints a trial's value in the unit its column header and
// axis name, never switching between ms and s from one cell to the next (a
// header that says s over cells that say ms misleads at a glance).
func fmtObjective(o objView, v float64) string {
	v = o.value(v)
	switch u := o.unit(); u {
	case "ms", "s":
		if !finite(v) {
			return "–"
		}
		switch a := math.Abs(v); {
		case a >= 100 || a == 0:
			return fmt.Sprintf("%.0f %s", v, u)
		case a >= 10:
			return fmt.Sprintf("%.1f %s", v, u)
		default:
			return fmt.Sprintf("%.2f %s", v, u)
		}
	}
	return fmtNum(v) + " " + o.Unit
}

func objectiveLabel(o objView) string {
	arrow := objectiveArrow(o)
	u := o.unit()
	if u == "" {
		return fmt.Sprintf("%s (%s)", o.Metric, arrow)
	}
	return fmt.Sprintf("%s, %s (%s)", o.Metric, u, arrow)
}

func objectiveArrow(o objView) string {
	if strings.HasPrefix(o.Direction, "max") {
		return "↑ better"
	}
	return "↓ better"
}

// objectiveName heads a column of unitless numbers about an objective (the
// influence table's rank correlations): the metric and its direction, no unit.
func objectiveName(o objView) string {
	return fmt.Sprintf("%s (%s)", o.Metric, objectiveArrow(o))
}

func newSearchView(d *plan.Summary) *searchView {
	s := d.Search
	if s == nil {
		return nil
	}
	var done []plan.Member
	for _, m := range s.Trials {
		if len(m.Values) == len(s.Objectives) && len(m.Values) > 0 {
			done = append(done, m)
		}
	}
	objs := displayObjectives(s.Objectives, done)
	v := &searchView{Objectives: objs}
	v.Complete = len(done)
	front := map[int]bool{}
	for _, m := range d.Pareto {
		front[m.Number] = true
	}
	for _, m := range done {
		if m.OnFront {
			front[m.Number] = true
		}
	}
	v.Feasible = len(front) > 0
	v.FrontLabel = "Pareto front of the trials that met the SLA"
	if !v.Feasible {
		for _, i := range nonDominated(done, s.Objectives) {
			front[done[i].Number] = true
		}
		v.FrontLabel = fmt.Sprintf("non-dominated trials: no trial met the SLA at the search load of %d users, so there is no feasible front", s.Users)
	}
	title := func(m plan.Member) string {
		var b strings.Builder
		fmt.Fprintf(&b, "trial #%d (generation %d)", m.Number, m.Generation)
		if m.Feasible {
			b.WriteString(", meets the SLA")
		}
		for k, o := range objs {
			fmt.Fprintf(&b, "\n%s: %s", o.Metric, fmtObjective(o, m.Values[k]))
		}
		fmt.Fprintf(&b, "\n%s", fmtParams(m.Params))
		return b.String()
	}
	for i := 0; i < len(objs); i++ {
		for j := i + 1; j < len(objs); j++ {
			ox, oy := objs[i], objs[j]
			c := LineChart{Title: fmt.Sprintf("%s vs %s", oy.Metric, ox.Metric), XLabel: objectiveLabel(ox), YLabel: objectiveLabel(oy), Scatter: true}
			groups := []Series{{Name: "other trials", Color: "#9aa3ad"}, {Name: v.shortFrontName(), Color: "#0072B2"}, {Name: "chosen", Color: "#1b7f3b"}}
			for _, m := range done {
				g := 0
				switch {
				case m.Number == d.Capacity.ChosenTrial:
					g = 2
				case front[m.Number]:
					g = 1
				}
				groups[g].X = append(groups[g].X, ox.value(m.Values[i]))
				groups[g].Y = append(groups[g].Y, oy.value(m.Values[j]))
				groups[g].Titles = append(groups[g].Titles, title(m))
			}
			for _, g := range groups {
				if len(g.X) > 0 {
					c.Series = append(c.Series, g)
				}
			}
			// Zoom on the front rather than a log axis: the front is where
			// the choice is made and its members differ by tens of percent,
			// which a log axis compresses; a far slower outlier becomes an
			// edge triangle that keeps its true value in its hover text.
			c.XClip = zoomOnFront(ox, groups[0].X, append(groups[1].X, groups[2].X...))
			c.YClip = zoomOnFront(oy, groups[0].Y, append(groups[1].Y, groups[2].Y...))
			switch {
			case c.XClip > 0 && c.YClip > 0:
				c.Title += " (zoomed; ▶ ▲ off chart)"
			case c.XClip > 0:
				c.Title += " (zoomed; ▶ off chart)"
			case c.YClip > 0:
				c.Title += " (zoomed; ▲ off chart)"
			}
			v.Projections = append(v.Projections, c.SVG())
		}
	}
	for _, m := range done {
		if front[m.Number] {
			for _, k := range sortedKeys(m.Params) {
				if !containsString(v.ParamNames, k) {
					v.ParamNames = append(v.ParamNames, k)
				}
			}
		}
	}
	for _, m := range done {
		if !front[m.Number] {
			continue
		}
		r := frontRow{Number: m.Number, Generation: m.Generation, Chosen: m.Number == d.Capacity.ChosenTrial}
		for k, o := range objs {
			r.Values = append(r.Values, fmtObjective(o, m.Values[k]))
		}
		for _, k := range v.ParamNames {
			val, ok := m.Params[k]
			if !ok {
				r.Params = append(r.Params, "–")
				continue
			}
			r.Params = append(r.Params, fmtValue(val))
		}
		v.Front = append(v.Front, r)
	}
	if len(s.Hypervolume) > 0 {
		hv := Series{Name: "hypervolume", Markers: true}
		for _, g := range s.Hypervolume {
			hv.X, hv.Y = append(hv.X, float64(g.Generation)), append(hv.Y, g.Hypervolume)
			hv.Titles = append(hv.Titles, fmt.Sprintf("generation %d (%d trials): hypervolume %.4g", g.Generation, g.Trials, g.Hypervolume))
		}
		v.Hypervolume = LineChart{Title: "Front hypervolume per generation (normalised objectives)", XLabel: "generation", YLabel: "hypervolume", ZeroY: true, Series: []Series{hv}}.SVG()
	}
	v.Influence = influenceRows(s)
	if len(d.Candidates) > 0 {
		c := BarChart{Title: "Short-sweep ceiling of each candidate", Parts: []string{"users"}, Unit: "concurrent users meeting the SLA"}
		for _, cd := range d.Candidates {
			label := fmt.Sprintf("trial #%d", cd.Trial)
			if cd.Trial < 0 {
				label = "baseline"
			}
			if cd.Chosen {
				label += " ✔"
			}
			note := fmtParams(cd.Params)
			if cd.FailedClause != "" {
				note += "; above it: " + cd.FailedClause
			}
			if cd.FullCeiling > 0 {
				note += fmt.Sprintf("; tied, full sweep: %d users", cd.FullCeiling)
			}
			if cd.TieBreak != "" {
				note += "; " + cd.TieBreak
			}
			c.Rows = append(c.Rows, BarRow{Label: label, Values: []float64{float64(cd.Ceiling)}, Note: note})
		}
		v.Candidates = c.SVG()
	}
	return v
}

func (v *searchView) shortFrontName() string {
	if v.Feasible {
		return "Pareto front"
	}
	return "non-dominated"
}

func influenceRows(s *plan.Search) []influenceRow {
	var params []string
	for _, in := range s.Influence {
		if !containsString(params, in.Param) {
			params = append(params, in.Param)
		}
	}
	doc := map[string]string{}
	for _, p := range s.Params {
		doc[p.Name] = p.Doc
	}
	var rows []influenceRow
	for _, p := range params {
		r := influenceRow{Param: p, Doc: doc[p], Cells: make([]influenceCell, len(s.Objectives))}
		for _, in := range s.Influence {
			if in.Param != p {
				continue
			}
			for k, o := range s.Objectives {
				if o.Metric == in.Objective && finite(in.Correlation) {
					r.Cells[k] = influenceCell{Value: in.Correlation, Style: influenceColor(in.Correlation, o.Direction), Set: true}
				}
			}
		}
		rows = append(rows, r)
	}
	return rows
}

func containsString(xs []string, s string) bool {
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
}

// zoomOnFront returns the axis cap that keeps the front (and the chosen
// trial) readable when another trial is far beyond it on a lower-is-better
// objective, or 0 when no zoom is needed.
func zoomOnFront(o objView, others, front []float64) float64 {
	if strings.HasPrefix(o.Direction, "max") || len(front) == 0 {
		return 0
	}
	frontMax, all := math.Inf(-1), math.Inf(-1)
	for _, v := range front {
		if finite(v) {
			frontMax, all = max(frontMax, v), max(all, v)
		}
	}
	for _, v := range others {
		if finite(v) {
			all = max(all, v)
		}
	}
	if !finite(frontMax) || frontMax <= 0 || all <= 1.5*frontMax {
		return 0
	}
	return 1.25 * frontMax
}
