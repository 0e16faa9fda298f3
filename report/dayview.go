package report

import (
	_ "embed"
	"fmt"
	"html/template"
	"math"
	"strings"

	"github.com/spoc-project/spoc/internal/words"
	"github.com/spoc-project/spoc/plan"
)

// The "A day of traffic" section has its own template block and renderer,
// so it reads plan.Summary.Day and nothing else.

//go:embed day.html.tmpl
var dayHTML string

var _ = template.Must(pageTemplate.Funcs(template.FuncMap{"dayView": newDayView}).Parse(dayHTML))

// dayView is the day section drawn and formatted.
type dayView struct {
	Lead                string
	Capacity, TTFT, ITL template.HTML
	Rows                []dayRowView
	Worst               []dayWorstView
	Sensitivity         *daySensitivityView
}

// daySensitivityView is target tracking's attainment against the replica
// start-up time.
type daySensitivityView struct {
	Policy, Verdict string
	Chart           template.HTML
	Rows            []daySensitivityRow
}

type daySensitivityRow struct {
	Startup, Requests, Minutes, GPUHours, VsStatic string
	Missed                                         bool
}

// dayWorstView is one of a policy's worst minutes.
type dayWorstView struct {
	Policy, At, TTFT, ITL, Causes, Fleet, Hits, Imbalance string
}

type dayRowView struct {
	Policy, Profile, Requests, Minutes, GPUHours, VsStatic, Cost string
	Peak                                                         string
}

func newDayView(sum *plan.Summary) *dayView {
	d := sum.Day
	if d == nil || len(d.Rows) == 0 {
		return nil
	}
	v := &dayView{Lead: fmt.Sprintf("%.1f hours simulated on replicas of %s behind the plan's router; peak %.0f users (users become arrivals by Little's law with the measured mean session of %.0f s); the static fleet is %s (peak users over %.0f %% of %.1f users per replica); a replica starts %.0f s after the decision. %s",
		d.LengthSeconds/3600, words.Plural(d.GPUsPerReplica, "GPU"), d.PeakUsers, d.MeanSessionSeconds, words.Plural(d.StaticReplicas, "replica"), 100*d.Headroom, d.CeilingPerReplica, d.StartupSeconds, d.Provenance.String())}
	perReplica := d.Headroom * d.CeilingPerReplica
	users := Series{Name: "users", Color: "#444", Dashed: true}
	for m, u := range d.Users {
		users.X, users.Y = append(users.X, float64(m)/60), append(users.Y, u)
	}
	capacity := LineChart{Title: "Users and the serving replicas' capacity", XLabel: "hour of the simulated day", YLabel: "users", ZeroY: true, Series: []Series{users}}
	ttft := LineChart{Title: "p95 TTFT per minute", XLabel: "hour of the simulated day", YLabel: "seconds", ZeroY: true}
	itl := LineChart{Title: "p95 ITL per minute", XLabel: "hour of the simulated day", YLabel: "milliseconds", ZeroY: true}
	for i, r := range d.Rows {
		c := color(i)
		serving := Series{Name: r.Policy, Color: c}
		minutes := len(d.Users)
		k := 0
		for m := range minutes {
			t := float64(m) * 60
			for k+1 < len(r.Replicas) && r.Replicas[k+1].At <= t {
				k++
			}
			n := 0
			if len(r.Replicas) > 0 {
				n = r.Replicas[k].Serving
			}
			serving.X, serving.Y = append(serving.X, t/3600), append(serving.Y, float64(n)*perReplica)
		}
		capacity.Series = append(capacity.Series, serving)
		ts, is := Series{Name: r.Policy, Color: c}, Series{Name: r.Policy, Color: c}
		for _, b := range r.Minutes {
			if b.Requests == 0 {
				continue
			}
			ts.X, ts.Y = append(ts.X, b.Start/3600), append(ts.Y, b.TTFT)
			is.X, is.Y = append(is.X, b.Start/3600), append(is.Y, 1000*b.ITL)
		}
		ttft.Series, itl.Series = append(ttft.Series, ts), append(itl.Series, is)
		for _, w := range r.Worst {
			m := int(w.Start / 60)
			fleet := w.Fleet()
			v.Worst = append(v.Worst, dayWorstView{Policy: r.Policy, At: fmt.Sprintf("%02d:%02d", m/60, m%60),
				TTFT: fmt.Sprintf("%.2f s", w.TTFT), ITL: fmt.Sprintf("%.0f ms", 1000*w.ITL), Causes: strings.Join(w.Causes, ", "), Fleet: fleet,
				Hits: fmt.Sprintf("%s (day %s)", fmtPct(w.HitShare), fmtPct(w.DayHitShare)), Imbalance: fmt.Sprintf("%.2f", w.Imbalance)})
		}
		for _, a := range r.Attainment {
			row := dayRowView{Policy: r.Policy, Profile: a.Profile, Requests: fmtPct(a.RequestShare), Minutes: fmtPct(a.MinuteShare)}
			if a.Profile == "overall" {
				row.GPUHours, row.VsStatic, row.Peak = fmt.Sprintf("%.1f", r.GPUHours), fmt.Sprintf("%.2f×", r.VsStatic), fmt.Sprint(r.PeakReplicas)
				row.Cost = "–"
				if r.Cost > 0 {
					row.Cost = fmt.Sprintf("$%.0f", r.Cost)
				}
			} else {
				row.Policy = ""
			}
			v.Rows = append(v.Rows, row)
		}
	}
	// a collapsed minute (a queue of minutes) is drawn on the top edge, so
	// that the region around the SLA stays readable
	if c := sum.SLA.TTFT; c.Max > 0 {
		ttft.YClip = 5 * c.Max.Seconds()
		ttft.HLines = append(ttft.HLines, RefLine{Value: c.Max.Seconds(), Label: fmt.Sprintf("SLA p%g", c.Percentile), Color: "#c0392b"})
	}
	if c := sum.SLA.ITL; c.Max > 0 {
		itl.YClip = 5 * float64(c.Max.Microseconds()) / 1000
		itl.HLines = append(itl.HLines, RefLine{Value: float64(c.Max.Microseconds()) / 1000, Label: fmt.Sprintf("SLA p%g", c.Percentile), Color: "#c0392b"})
	}
	v.Capacity, v.TTFT, v.ITL = capacity.SVG(), ttft.SVG(), itl.SVG()
	v.Sensitivity = newDaySensitivityView(d.Sensitivity)
	return v
}

// newDaySensitivityView draws the shares of requests and minutes within
// the SLA against the start-up time, with the start-up from which target
// tracking misses the morning ramp marked.
func newDaySensitivityView(s *plan.StartupSensitivity) *daySensitivityView {
	if s == nil || len(s.Points) == 0 {
		return nil
	}
	v := &daySensitivityView{Policy: s.Policy}
	first := s.Points[0]
	req, mins := Series{Name: "requests within SLA", Markers: true}, Series{Name: "minutes within SLA", Markers: true, Dashed: true}
	chart := LineChart{Title: "Attainment against the replica start-up time", XLabel: "start-up time (minutes)", YLabel: "% within SLA", ZeroY: true, YMax: 100}
	for _, p := range s.Points {
		x := p.StartupSeconds / 60
		req.X, req.Y = append(req.X, x), append(req.Y, 100*p.RequestShare)
		mins.X, mins.Y = append(mins.X, x), append(mins.Y, 100*p.MinuteShare)
		v.Rows = append(v.Rows, daySensitivityRow{Startup: fmtStartup(p.StartupSeconds), Requests: fmtPct(p.RequestShare), Minutes: fmtPct(p.MinuteShare),
			GPUHours: fmt.Sprintf("%.1f", p.GPUHours), VsStatic: fmt.Sprintf("%.2f×", p.VsStatic),
			Missed: s.MissesRampFromSeconds >= 0 && p.StartupSeconds >= s.MissesRampFromSeconds})
	}
	chart.Series = []Series{req, mins}
	chart.HLines = []RefLine{{Value: 100 * (first.RequestShare - s.MissShare), Label: fmt.Sprintf("%s − %.0f points", fmtStartup(first.StartupSeconds), 100*s.MissShare), Color: "#c0392b"}}
	if within, from, ok := s.MissesRamp(); ok {
		chart.VLines = []RefLine{{Value: from / 60, Label: "misses the ramp", Color: "#c0392b"}}
		v.Verdict = fmt.Sprintf("Above a start-up of %s, %s misses the morning ramp: from %s its requests within the SLA fall more than %.0f points below a start-up of %s (%s against %s).",
			fmtStartup(within), s.Policy, fmtStartup(from), 100*s.MissShare, fmtStartup(first.StartupSeconds), fmtPct(pointAt(s, from).RequestShare), fmtPct(first.RequestShare))
	} else {
		v.Verdict = fmt.Sprintf("Up to a start-up of %s, %s keeps its requests within the SLA within %.0f points of a start-up of %s: none of these start-ups misses the morning ramp.",
			fmtStartup(s.Points[len(s.Points)-1].StartupSeconds), s.Policy, 100*s.MissShare, fmtStartup(first.StartupSeconds))
	}
	v.Chart = chart.SVG()
	return v
}

func pointAt(s *plan.StartupSensitivity, startup float64) plan.SensitivityPoint {
	for _, p := range s.Points {
		if p.StartupSeconds == startup {
			return p
		}
	}
	return plan.SensitivityPoint{}
}

// fmtStartup writes a start-up time in seconds or minutes.
func fmtStartup(sec float64) string {
	if sec >= 60 && math.Mod(sec, 60) == 0 {
		return fmt.Sprintf("%.0f min", sec/60)
	}
	return fmt.Sprintf("%.0f s", sec)
}

// writeDayMarkdown writes the day section of summary.md: the same lead,
// rows, worst minutes and start-up sensitivity as report.html, without
// the charts.
func writeDayMarkdown(b *strings.Builder, sum *plan.Summary) {
	v := newDayView(sum)
	if v == nil {
		return
	}
	fmt.Fprintf(b, "## A day of traffic\n\n%s\n\n", mdEscape(v.Lead))
	b.WriteString("| policy | profile | requests within SLA | minutes within SLA | GPU-hours | vs static | cost | peak replicas |\n|---|---|---:|---:|---:|---:|---:|---:|\n")
	for _, r := range v.Rows {
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s | %s | %s |\n", mdEscape(r.Policy), mdEscape(r.Profile), r.Requests, r.Minutes, r.GPUHours, r.VsStatic, r.Cost, r.Peak)
	}
	if len(v.Worst) > 0 {
		b.WriteString("\nThe worst minutes and why:\n\n| policy | minute | p95 TTFT | p95 ITL | why | fleet | prefix hits | imbalance |\n|---|---:|---:|---:|---|---|---:|---:|\n")
		for _, w := range v.Worst {
			fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s | %s | %s |\n", mdEscape(w.Policy), w.At, w.TTFT, w.ITL, mdEscape(w.Causes), mdEscape(w.Fleet), w.Hits, w.Imbalance)
		}
	}
	if s := v.Sensitivity; s != nil {
		fmt.Fprintf(b, "\nSensitivity to start-up time (%s): %s\n\n| start-up | requests within SLA | minutes within SLA | GPU-hours | vs static | morning ramp |\n|---:|---:|---:|---:|---:|---|\n", mdEscape(s.Policy), mdEscape(s.Verdict))
		for _, r := range s.Rows {
			ramp := "kept"
			if r.Missed {
				ramp = "missed"
			}
			fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s |\n", r.Startup, r.Requests, r.Minutes, r.GPUHours, r.VsStatic, ramp)
		}
	}
	b.WriteString("\n")
}
