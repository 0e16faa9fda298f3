package report

import (
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/spoc-project/spoc/capacity"
	"github.com/spoc-project/spoc/internal/words"
	"github.com/spoc-project/spoc/plan"
)

// The "Serving N users" section has its own template block and renderer,
// so it reads plan.Summary.Cost and nothing else.

//go:embed cost.html.tmpl
var costHTML string

var _ = template.Must(pageTemplate.Funcs(template.FuncMap{"costView": newCostView}).Parse(costHTML))

// costView is the cost section with every figure formatted: the template
// and the Markdown renderer only lay it out.
type costView struct {
	Users      int
	Headroom   string
	Provenance string
	Rows       []costRowView
	Notes      []string
	// Fleet is the simulated fleet's sizing in one paragraph, and its
	// runs; empty when the plan simulated none.
	Fleet     string
	FleetRuns []string
	// FleetVerify is the small live fleet checked against the simulation,
	// in one paragraph, and its runs, one line each.
	FleetVerify     string
	FleetVerifyRuns []string
}

type costRowView struct {
	Option, Source                         string
	Extrapolates                           string
	GPUsPerDeployment                      int
	Ceiling, Deployments, GPUs             string
	PerHour, PerUserMonth, TokensPerDollar string
}

// newCostView returns nil when the plan asked no user count.
func newCostView(c *plan.Cost) *costView {
	if c == nil {
		return nil
	}
	v := &costView{Users: c.TargetUsers, Headroom: fmtPct(c.Headroom), Notes: c.Notes}
	for _, r := range c.Rows {
		row := costRowView{Option: r.Option, Source: r.Provenance.String(), Extrapolates: r.Extrapolates, GPUsPerDeployment: r.GPUsPerDeployment,
			Ceiling:     ceilingSpan(r),
			Deployments: deploymentsText(r),
			GPUs:        deploymentSpan(r.GPUsMax, r.GPUsMin),
			PerHour:     "no price", PerUserMonth: "no price", TokensPerDollar: "no price"}
		if r.Priced {
			row.PerHour = dollarSpan(r.DollarsPerHourMin, r.DollarsPerHourMax)
			row.PerUserMonth = dollarSpan(r.DollarsPerUserMonthMin, r.DollarsPerUserMonthMax)
			row.TokensPerDollar = "–"
			if r.TokensPerDollar > 0 {
				row.TokensPerDollar = fmtNum(r.TokensPerDollar)
			}
		}
		v.Rows = append(v.Rows, row)
	}
	v.Fleet, v.FleetRuns = fleetText(c.Fleet)
	if c.Fleet != nil {
		v.FleetVerify, v.FleetVerifyRuns = fleetVerifyText(c.Fleet.Verified)
	}
	if len(c.Rows) > 0 {
		v.Provenance = "The chosen deployment's ceiling: " + c.Rows[0].Provenance.String() + "."
	}
	if len(c.Rows) > 1 {
		v.Provenance += " The other rows are the compare phase's: always simulated, the chosen configuration on hardware the plan did not run on."
	}
	if len(c.PeakShares) > 0 {
		v.Provenance += " Every ceiling here was measured at the peak's profile mix (" + sharesText(c.PeakShares) +
			", plan.peak_shares), not the workload's: the plan swept each option again at it, since the peak is what the deployments must serve."
	}
	return v
}

// fleetText says what simulating the fleet found beside the division,
// and lists each fleet simulated at the target.
func fleetText(f *plan.FleetSize) (string, []string) {
	if f == nil {
		return "", nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Simulated as a fleet (%s) behind the %s router at %d users, the sweep's windows, each replica %s: ",
		f.Provenance.String(), f.Router, f.TargetUsers, words.Plural(f.GPUsPerReplica, "GPU"))
	switch {
	case f.Replicas == 0:
		fmt.Fprintf(&b, "no fleet of up to %d replicas meets the SLA, where the division says %d replicas: the router, not the size, is what fails (docs/fleet.md).", f.MaxReplicas, f.DivisionReplicas)
	default:
		fmt.Fprintf(&b, "%d replicas meet the SLA and %d do not; the division says %d (%+d).", f.Replicas, f.Replicas-1, f.DivisionReplicas, f.Replicas-f.DivisionReplicas)
	}
	runs := make([]string, 0, len(f.Runs))
	for _, r := range f.Runs {
		verdict := "meets the SLA"
		if !r.Pass {
			verdict = "fails: " + r.FailedClause
		}
		runs = append(runs, fmt.Sprintf("%d replicas: %s (prefix-cache hit rate %s)", r.Replicas, verdict, fmtPct(r.PrefixHitRate)))
	}
	return b.String(), runs
}

// fleetVerifyText says how the small live fleet compared with its
// simulation: one paragraph, and a line per live run.
func fleetVerifyText(v *plan.FleetVerify) (string, []string) {
	if v == nil {
		return "", nil
	}
	if v.Skipped != "" {
		return fmt.Sprintf("Not verified live on %d replicas behind %s: %s.", v.Replicas, v.Router, v.Skipped), nil
	}
	loads := make([]string, 0, len(v.Runs))
	var unjudged, mismatch []string
	for _, r := range v.Runs {
		loads = append(loads, fmt.Sprintf("%d (%s)", r.Users, aimWords(r.Aim)))
		switch {
		case r.PredictedUnjudged || r.LiveUnjudged:
			unjudged = append(unjudged, strconv.Itoa(r.Users))
		case r.PredictedPass != r.LivePass:
			mismatch = append(mismatch, strconv.Itoa(r.Users))
		}
	}
	verdict, title := "", "Live fleet check:"
	switch {
	case v.Error != "":
		verdict = "the verification FAILED (" + v.Error + "), so the fleet size above is not verified"
	case len(mismatch) > 0:
		verdict = "the live fleet does NOT agree with the simulated one at " + strings.Join(mismatch, " and ") +
			" users: the fleet size above rests on a router model this deployment did not confirm"
	case len(unjudged) > 0:
		verdict = "nothing confirmed: too few samples to judge at " + strings.Join(unjudged, " and ") +
			" users, so the fleet size above is not verified (longer windows judge more)"
	case len(v.Runs) == 0:
		verdict = "no load was run, so the fleet size above is not verified"
	default:
		verdict, title = "the live fleet agrees with the simulated one at every load run", "Verified live:"
	}
	text := fmt.Sprintf("%s %d replicas behind %s (the HAProxy spoc started), simulated ceiling %d users (first failing %d); run live at %s users: %s (%.0f s of engine time).",
		title, v.Replicas, v.Router, v.PredictedCeiling, v.PredictedFirstFailing, strings.Join(loads, " and "), verdict, v.EngineSeconds)
	word := func(pass, unjudged bool, failed string) string {
		switch {
		case unjudged:
			return "unjudged (too few samples)"
		case pass:
			return "meets the SLA"
		case failed != "":
			return "fails: " + failed
		}
		return "fails"
	}
	runs := make([]string, 0, len(v.Runs))
	for _, r := range v.Runs {
		pred := word(r.PredictedPass, r.PredictedUnjudged, r.PredictedFailed)
		if r.Predicted.TTFTP95Ms > 0 {
			pred += fmt.Sprintf(" (%d requests completed, TTFT p95 %s, %s)", r.PredictedRequests, fmtMs(r.Predicted.TTFTP95Ms), hitRateText(r.PredictedRequests, r.Predicted.PrefixCacheHitRate))
		}
		runs = append(runs, fmt.Sprintf("%d users: predicted %s; live %s (%d requests completed, TTFT p95 %s, %s; %s)", r.Users,
			pred, word(r.LivePass, r.LiveUnjudged, r.LiveFailed), r.LiveRequests, fmtMs(r.Measured.TTFTP95Ms), hitRateText(r.LiveRequests, r.Measured.PrefixCacheHitRate), r.Records))
	}
	return text, runs
}

// hitRateText is a run's prefix-cache hit rate, over its completed
// requests: a run that completed none has no rate (0 % would read as a
// cold cache).
func hitRateText(completed int64, rate float64) string {
	if completed == 0 {
		return "no prefix-cache hit rate: no request completed"
	}
	return "prefix-cache hit rate " + fmtPct(rate)
}

// aimWords says which count of the simulated walk a verification run
// aimed at (plan.FleetVerifyRun.Aim).
func aimWords(aim string) string {
	switch aim {
	case "ceiling":
		return "the simulated ceiling"
	case "unconfirmed":
		return "the largest count the simulated walk passed, on too few samples to judge"
	case "first failing":
		return "the simulated first failing count"
	}
	return aim
}

// ceilingSpan is the ceiling with its interval: "156 (132–174)" for the
// sweep's interval over seeds, "lo–hi" for the ceiling less the sweep's
// step (summaries written before ceiling_hi_users have only the ceiling
// as the high end).
func ceilingSpan(r plan.CostRow) string {
	if r.IntervalMethod == capacity.IntervalMethod || r.IntervalMethod == capacity.EstimatorMethod {
		return fmt.Sprintf("%d (%s)", r.CeilingUsers, span(r.CeilingLoUsers, r.CeilingHiUsers))
	}
	return span(r.CeilingLoUsers, max(r.CeilingHiUsers, r.CeilingUsers))
}

// sharesText prints profile shares as "P0 50%, P1 30%, P2 20%".
func sharesText(shares map[string]float64) string {
	names := make([]string, 0, len(shares))
	for n := range shares {
		names = append(names, n)
	}
	sort.Strings(names)
	for i, n := range names {
		names[i] = n + " " + fmtPct(shares[n])
	}
	return strings.Join(names, ", ")
}

// span is "lo–hi", or one number when both ends agree.
func span(lo, hi int) string {
	if lo == hi {
		return fmt.Sprint(hi)
	}
	return fmt.Sprintf("%d–%d", lo, hi)
}

// deploymentsText is the deployments at the estimate with the range its
// confidence interval gives — "6 (5–7)": the uncertainty is worth two
// deployments — and whether headroom covers the spread over seeds.
func deploymentsText(r plan.CostRow) string {
	s := deploymentSpan(r.DeploymentsMax, r.DeploymentsMin)
	if r.IntervalMethod != capacity.EstimatorMethod || r.Deployments == 0 {
		return s
	}
	if r.DeploymentsMin != r.DeploymentsMax {
		s = fmt.Sprintf("%d (%s)", r.Deployments, s)
	}
	if r.SpreadLoUsers > 0 && !r.HeadroomCovers {
		s += fmt.Sprintf("; headroom does not cover the seed spread (low end %d)", r.SpreadLoUsers)
	}
	return s
}

// deploymentSpan is span for counts sized from the low and high ceiling;
// 0 deployments means that end serves no one.
func deploymentSpan(atLo, atHi int) string {
	if atHi == 0 {
		return "none serves a user"
	}
	if atLo == 0 {
		return fmt.Sprintf("≥ %d", atHi)
	}
	return span(atHi, atLo)
}

func dollarSpan(lo, hi float64) string {
	if fmt.Sprintf("%.2f", lo) == fmt.Sprintf("%.2f", hi) {
		return fmt.Sprintf("$%.2f", hi)
	}
	return fmt.Sprintf("$%.2f–$%.2f", lo, hi)
}

// writeCostMarkdown writes the section to summary.md; nothing when the
// plan asked no user count.
func writeCostMarkdown(w io.Writer, c *plan.Cost) {
	v := newCostView(c)
	if v == nil {
		return
	}
	var b strings.Builder
	fmt.Fprintf(&b, "## Serving %d users\n\nEach deployment run at %s of its capacity; the capacity is an interval (the estimate with its 95 %% confidence interval; without an estimate, its 95 %% interval over workload seeds or the ceiling less the sweep's step), so deployments are given at the estimate with the range its interval gives (what the measurement's uncertainty is worth), and GPUs and cost for both ends. %s\n\n", v.Users, v.Headroom, v.Provenance)
	b.WriteString("| option | GPUs per deployment | capacity (lo–hi) | deployments (range) | GPUs | $/hour | $/user/month | tokens per $ | source |\n|---|---:|---:|---:|---:|---:|---:|---:|---|\n")
	for _, r := range v.Rows {
		fmt.Fprintf(&b, "| %s | %d | %s | %s | %s | %s | %s | %s | %s |\n", mdEscape(r.Option), r.GPUsPerDeployment, r.Ceiling, r.Deployments, r.GPUs,
			mdEscape(r.PerHour), mdEscape(r.PerUserMonth), r.TokensPerDollar, mdEscape(sourceWithExtrapolation(r)))
	}
	if v.Fleet != "" {
		fmt.Fprintf(&b, "\n%s\n\n", mdEscape(v.Fleet))
		for _, r := range v.FleetRuns {
			fmt.Fprintf(&b, "- %s\n", mdEscape(r))
		}
	}
	if v.FleetVerify != "" {
		fmt.Fprintf(&b, "\n%s\n\n", mdEscape(v.FleetVerify))
		for _, r := range v.FleetVerifyRuns {
			fmt.Fprintf(&b, "- %s\n", mdEscape(r))
		}
	}
	for _, n := range v.Notes {
		fmt.Fprintf(&b, "\n%s\n", mdEscape(n))
	}
	b.WriteString("\n")
	io.WriteString(w, b.String())
}

// sourceWithExtrapolation is the row's source, with the calibration
// envelope's excursions at that option after it.
func sourceWithExtrapolation(r costRowView) string {
	if r.Extrapolates == "" {
		return r.Source
	}
	return r.Source + "; ⚠ outside the calibration: " + r.Extrapolates
}
