package report

import (
	"fmt"
	"html/template"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/spoc-project/spoc/plan"
)

// page is what the HTML template renders: the summary plus every chart drawn
// and every derived figure computed, so the template only lays out.
type page struct {
	*plan.Summary
	SLAText     string
	SimRun      bool
	Measured    float64
	MeasuredSrc string
	HasMeasured bool
	Workload    *workloadView
	Search      *searchView
	Sweep       *sweepView
	Telemetry   *telemetryView
	Kernels     *kernelsView
	CompareBars template.HTML
	// CompareOutside is each compare target's calibration excursions.
	CompareOutside map[string]string
	// Missing lists what this plan did not collect, one sentence each.
	Missing []string
	Nav     []navItem
}

type navItem struct{ ID, Title string }

func newPage(d *plan.Summary) *page {
	p := &page{Summary: d, SLAText: slaText(d), SimRun: d.Client.Virtual || d.Engine.Kind == "sim"}
	p.Measured, p.MeasuredSrc, p.HasMeasured = measuredHitRate(d)
	p.Workload = newWorkloadView(d)
	p.Search = newSearchView(d)
	p.Sweep = newSweepView(d)
	p.Telemetry = newTelemetryView(d)
	p.Kernels = newKernelsView(d)
	p.CompareOutside = map[string]string{}
	for _, r := range d.Compare {
		if x := d.Envelope.TargetOutside(r.Name); x != "" {
			p.CompareOutside[r.Name] = x
		}
	}
	if len(d.Compare) > 0 {
		c := BarChart{Title: "Capacity ceiling per hardware target", Parts: []string{"users"}, Unit: "concurrent users at the SLA"}
		for _, r := range d.Compare {
			c.Rows = append(c.Rows, BarRow{Label: r.Name, Values: []float64{float64(r.Users)}, Note: fmt.Sprintf("%d× %s, %.1f users/GPU", r.GPUs, r.GPU, r.UsersPerGPU)})
		}
		p.CompareBars = c.SVG()
	}
	p.Nav = []navItem{{"verdict", "Verdict"}, {"workload", "Workload"}, {"search", "Search"}, {"sweep", "Sweep"}, {"telemetry", "Telemetry"}, {"kernels", "Kernels"}}
	if len(d.Compare) > 0 {
		p.Nav = append(p.Nav, navItem{"compare", "Hardware"})
	}
	if d.Cost != nil {
		p.Nav = append(p.Nav, navItem{"cost", "Cost"})
	}
	if d.Day != nil && len(d.Day.Rows) > 0 {
		p.Nav = append(p.Nav, navItem{"day", "Day"})
	}
	if d.Envelope != nil {
		p.Nav = append(p.Nav, navItem{"calibration", "Calibration"})
	}
	p.Nav = append(p.Nav, navItem{"assumptions", "Assumptions"}, navItem{"notes", "Notes"})
	if d.Workload == nil {
		p.Missing = append(p.Missing, "Workload inspection was not recorded: profile and prefix-geometry figures are missing.")
	}
	if d.Search == nil {
		p.Missing = append(p.Missing, "No parameter search ran: the configuration is the configured engine flags.")
	}
	if len(d.Sweep) == 0 {
		p.Missing = append(p.Missing, "No capacity sweep was recorded.")
	}
	if d.Telemetry == nil {
		p.Missing = append(p.Missing, "Engine and GPU telemetry was not collected (telemetry.enabled is false, or no /metrics or DCGM exporter was reachable): the sweep's KV-cache, prefix-hit, SM and queue columns are unmeasured (–).")
	}
	if d.Kernels == nil {
		if !notesMention(d.Notes, "kernel trace") {
			p.Missing = append(p.Missing, "No kernel trace was analysed: set trace.file to an Nsight Systems export (spoc trace recipe prints how to capture one).")
		}
	} else if len(d.Kernels.Roofline) == 0 {
		p.Missing = append(p.Missing, "The roofline comparison is missing: the model or GPU is not in the perfmodel catalog.")
	}
	if len(d.Compare) == 0 {
		p.Missing = append(p.Missing, "No hardware comparison was requested (spoc plan --compare).")
	}
	return p
}

// notesMention says whether a plan note already tells what is missing, so
// the report does not say it twice.
func notesMention(notes []string, what string) bool {
	for _, n := range notes {
		if strings.Contains(strings.ToLower(n), what) {
			return true
		}
	}
	return false
}

// workloadView is the Workload section.
type workloadView struct {
	Profiles []profileRow
	Growth   template.HTML
	Split    template.HTML
	HitRates template.HTML
}

type profileRow struct {
	Name                          string
	Share                         float64
	Sessions, Requests, Turns     int
	StartP50, StartP95, EndP50    int
	Max, Output                   int
	GrowthPerTurn, Think, IdealHR float64
}

func newWorkloadView(d *plan.Summary) *workloadView {
	w := d.Workload
	if w == nil {
		return nil
	}
	v := &workloadView{}
	growth := LineChart{Title: "Context per turn (median session, start → end)", XLabel: "turn", YLabel: "prompt tokens", ZeroY: true}
	for _, p := range w.Profiles {
		r := profileRow{Name: p.Name, Share: p.Share, Sessions: p.Sessions, Requests: p.Requests, Turns: p.TurnsP50,
			StartP50: p.ContextStartP50, StartP95: p.ContextStartP95, EndP50: p.ContextEndP50, Max: p.ContextMax,
			Output: p.OutputBudgetP50, Think: p.ThinkTimeP50S, IdealHR: p.IdealHitRate}
		if p.TurnsP50 > 1 {
			r.GrowthPerTurn = float64(p.ContextEndP50-p.ContextStartP50) / float64(p.TurnsP50-1)
		}
		v.Profiles = append(v.Profiles, r)
		last := float64(max(p.TurnsP50, 1))
		growth.Series = append(growth.Series, Series{Name: p.Name, X: []float64{1, last}, Y: []float64{float64(p.ContextStartP50), float64(p.ContextEndP50)},
			Titles: []string{fmt.Sprintf("%s turn 1: median context %s tokens", p.Name, fmtNum(float64(p.ContextStartP50))),
				fmt.Sprintf("%s turn %d (median session length): median end context %s tokens, max %s", p.Name, p.TurnsP50, fmtNum(float64(p.ContextEndP50)), fmtNum(float64(p.ContextMax)))}})
	}
	if d.Engine.MaxModelLen > 0 {
		growth.HLines = append(growth.HLines, RefLine{Value: float64(d.Engine.MaxModelLen), Label: fmt.Sprintf("max-model-len %s", fmtNum(float64(d.Engine.MaxModelLen))), Color: "#555555"})
	}
	if len(w.Profiles) > 0 {
		v.Growth = growth.SVG()
	}
	// Segment kinds in prefix order, then any unknown kind; kinds with no
	// tokens are left out of the legend.
	var kinds []string
	for _, k := range append([]string{"system", "root", "team", "user", "turn", "assistant"}, append(sortedKeys(w.Prefix.StartSplit), sortedKeys(w.Prefix.Split)...)...) {
		if !slices.Contains(kinds, k) && (w.Prefix.Split[k] > 0 || w.Prefix.StartSplit[k] > 0) {
			kinds = append(kinds, k)
		}
	}
	split := BarChart{Title: "Prompt tokens by segment (prefix geometry)", Parts: kinds, Max: 1, Percent: true, Unit: "share of prompt tokens"}
	for _, row := range []struct {
		label string
		m     map[string]float64
	}{{"session starts", w.Prefix.StartSplit}, {"all requests", w.Prefix.Split}} {
		if len(row.m) == 0 {
			continue
		}
		vals := make([]float64, len(kinds))
		for i, k := range kinds {
			vals[i] = row.m[k]
		}
		split.Rows = append(split.Rows, BarRow{Label: row.label, Values: vals})
	}
	if len(split.Rows) > 0 {
		v.Split = split.SVG()
	}
	hr := BarChart{Title: "Prefix-cache hit rate: ideal vs measured", Parts: []string{"hit rate"}, Max: 1, Percent: true, Unit: "share of prompt tokens served from cache"}
	hr.Rows = append(hr.Rows, BarRow{Label: "ideal (infinite cache)", Values: []float64{w.Prefix.IdealHitRate}},
		BarRow{Label: "ideal, first turns", Values: []float64{w.Prefix.FirstTurnHitRate}})
	if rate, src, ok := measuredHitRate(d); ok {
		hr.Rows = append(hr.Rows, BarRow{Label: "measured", Values: []float64{rate}, Note: src})
	}
	v.HitRates = hr.SVG()
	return v
}

// sweepView is the Sweep section.
type sweepView struct {
	TTFT, ITL, Throughput template.HTML
	// BindingHead names the binding clause's metric in its profile when
	// the table's all-profile columns do not show it ("P2 TTFT p95");
	// Binding is its value at each sweep level, in d.Sweep's order.
	BindingHead string
	Binding     []string
}

// bindingColumn is the binding clause's metric in its profile at every
// level of the sweep: the table's latency columns are over all profiles,
// and a per-profile clause (P2 ttft p95) binds on another number. Empty
// when the clause is overall or its metric is not recorded per profile.
func bindingColumn(d *plan.Summary) (head string, cells []string) {
	m := d.Capacity.BindingMargin
	if m == nil || m.Scope == "" || m.Scope == "overall" {
		return "", nil
	}
	var value func(plan.ProfilePoint) float64
	switch m.Clause {
	case "ttft p95":
		head, value = m.Scope+" TTFT p95", func(p plan.ProfilePoint) float64 { return p.TTFTP95Ms }
	case "itl p95":
		head, value = m.Scope+" ITL p95", func(p plan.ProfilePoint) float64 { return p.ITLP95Ms }
	default:
		return "", nil
	}
	for _, s := range d.Sweep {
		cell := "–"
		for _, p := range s.Profiles {
			if p.Name == m.Scope && p.Requests > 0 {
				cell = fmtMs(value(p))
			}
		}
		cells = append(cells, cell)
	}
	return head, cells
}

func newSweepView(d *plan.Summary) *sweepView {
	if len(d.Sweep) == 0 {
		return nil
	}
	var profiles []string
	for _, s := range d.Sweep {
		for _, p := range s.Profiles {
			if !slices.Contains(profiles, p.Name) {
				profiles = append(profiles, p.Name)
			}
		}
	}
	build := func(title, ylabel string, overall func(plan.SweepPoint) float64, prof func(plan.ProfilePoint) float64, format func(float64) string) LineChart {
		c := LineChart{Title: title, XLabel: "concurrent users", YLabel: ylabel, ZeroY: true}
		all := Series{Name: "overall", Dashed: len(profiles) > 0, Markers: true, Color: "#222222"}
		for _, s := range d.Sweep {
			if s.Requests == 0 {
				continue // nothing completed: no latency to draw
			}
			all.X, all.Y = append(all.X, float64(s.Users)), append(all.Y, overall(s))
			all.Titles = append(all.Titles, fmt.Sprintf("%d users, overall: %s (%s)", s.Users, format(overall(s)), s.Verdict()))
		}
		for _, name := range profiles {
			sr := Series{Name: name, Markers: true}
			for _, s := range d.Sweep {
				for _, p := range s.Profiles {
					if p.Name == name && p.Requests > 0 {
						sr.X, sr.Y = append(sr.X, float64(s.Users)), append(sr.Y, prof(p))
						sr.Titles = append(sr.Titles, fmt.Sprintf("%d users, %s: %s (%d requests)", s.Users, name, format(prof(p)), p.Requests))
					}
				}
			}
			c.Series = append(c.Series, sr)
		}
		c.Series = append(c.Series, all)
		switch {
		case d.Capacity.Estimate != nil && d.Capacity.Users > 0:
			// the capacity is the estimate over fresh seeds; the levels
			// drawn are the walk on workload.seed, whose own ceiling may
			// sit a step or two away
			c.VLines = append(c.VLines, RefLine{Value: float64(d.Capacity.Users), Label: fmt.Sprintf("capacity %d (estimate)", d.Capacity.Users), Left: true})
			if w := d.Capacity.Ceiling; w > 0 && w != d.Capacity.Users {
				c.VLines = append(c.VLines, RefLine{Value: float64(w), Label: fmt.Sprintf("walk %d", w)})
			}
		case d.Capacity.Users > 0:
			c.VLines = append(c.VLines, RefLine{Value: float64(d.Capacity.Users), Label: fmt.Sprintf("ceiling %d", d.Capacity.Users), Left: true})
		}
		if d.Capacity.FirstFailingUsers > 0 {
			c.VLines = append(c.VLines, RefLine{Value: float64(d.Capacity.FirstFailingUsers), Label: fmt.Sprintf("fails %d", d.Capacity.FirstFailingUsers), Color: "#b00020"})
		}
		return c
	}
	// clip caps a latency chart at what the sweep shows up to the first
	// failing count (and twice the SLA), so that the blow-up beyond does
	// not flatten the region that decides the ceiling.
	clip := func(c *LineChart, sla float64) {
		limit := 2 * sla
		for _, s := range c.Series {
			for i := range s.X {
				if d.Capacity.FirstFailingUsers == 0 || s.X[i] <= float64(d.Capacity.FirstFailingUsers) {
					limit = max(limit, s.Y[i])
				}
			}
		}
		if limit > 0 {
			c.YClip = limit * 1.15
		}
	}
	ms := func(v float64) string { return fmtMs(v) }
	ttft := build("TTFT p95 against users", "TTFT p95 (ms)", func(s plan.SweepPoint) float64 { return s.TTFTP95Ms }, func(p plan.ProfilePoint) float64 { return p.TTFTP95Ms }, ms)
	if m := d.SLA.TTFT.Max; m > 0 {
		ttft.HLines = append(ttft.HLines, RefLine{Value: float64(m) / 1e6, Label: fmt.Sprintf("SLA p%g ≤ %s", d.SLA.TTFT.Percentile, m)})
	}
	itl := build("ITL p95 against users", "ITL p95 (ms)", func(s plan.SweepPoint) float64 { return s.ITLP95Ms }, func(p plan.ProfilePoint) float64 { return p.ITLP95Ms }, ms)
	if m := d.SLA.ITL.Max; m > 0 {
		itl.HLines = append(itl.HLines, RefLine{Value: float64(m) / 1e6, Label: fmt.Sprintf("SLA p%g ≤ %s", d.SLA.ITL.Percentile, m)})
	}
	clip(&ttft, float64(d.SLA.TTFT.Max)/1e6)
	clip(&itl, float64(d.SLA.ITL.Max)/1e6)
	tput := build("Output throughput against users", "output tokens/s", func(s plan.SweepPoint) float64 { return s.OutputThroughput }, func(p plan.ProfilePoint) float64 { return p.OutputThroughput },
		func(v float64) string { return fmtNum(v) + " tok/s" })
	v := &sweepView{TTFT: ttft.SVG(), ITL: itl.SVG(), Throughput: tput.SVG()}
	v.BindingHead, v.Binding = bindingColumn(d)
	return v
}

// nonDominated returns the indexes of the members not dominated by another
// (values oriented by each objective's direction).
func nonDominated(ms []plan.Member, objs []plan.Objective) []int {
	better := func(a, b float64, o plan.Objective) int {
		if strings.HasPrefix(o.Direction, "max") {
			a, b = -a, -b
		}
		switch {
		case a < b:
			return 1
		case a > b:
			return -1
		}
		return 0
	}
	var out []int
	for i, a := range ms {
		dominated := false
		for j, b := range ms {
			if i == j {
				continue
			}
			strictly, worse := false, false
			for k, o := range objs {
				switch better(b.Values[k], a.Values[k], o) {
				case 1:
					strictly = true
				case -1:
					worse = true
				}
			}
			if strictly && !worse {
				dominated = true
				break
			}
		}
		if !dominated {
			out = append(out, i)
		}
	}
	sort.Ints(out)
	return out
}

// influenceColor is a diverging background for a rank correlation,
// coloured by what the correlation means for the objective, not by its
// sign: green when raising the parameter moves the objective the way the
// study wants (up for maximize, down for minimize), red when it moves it the
// wrong way, white at zero. The cell's text keeps the sign.
func influenceColor(r float64, direction string) template.CSS {
	r = math.Max(-1, math.Min(1, r))
	a := math.Abs(r)
	good := (r > 0) == (direction != "minimize")
	base := [3]float64{26, 122, 62} // green
	if !good {
		base = [3]float64{178, 24, 43} // red
	}
	mix := func(c float64) int { return int(255 - a*(255-c) + 0.5) }
	fg := "#1b1f24"
	if a > 0.6 {
		fg = "#ffffff"
	}
	return template.CSS(fmt.Sprintf("background:rgb(%d,%d,%d);color:%s", mix(base[0]), mix(base[1]), mix(base[2]), fg))
}
