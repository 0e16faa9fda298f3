package result

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spoc-project/spoc/internal/errwriter"
)

// WriteText renders res as a human-readable table: one row per profile and
// overall, then the client check and the SLA verdict.
func WriteText(w io.Writer, res *Result) error {
	ew := errwriter.New(w)
	if res.Window.Start.IsZero() {
		// every record was warm-up (or there were none): there is no window
		ew.Printf("no records in a measured window (%d outside it, e.g. warm-up)\n\n", res.Excluded)
	} else {
		ew.Printf("window %s → %s (%.1fs", res.Window.Start.Format(time.RFC3339), res.Window.End.Format(time.RFC3339), res.Window.Seconds)
		if res.Window.Inferred {
			ew.Printf(", inferred from the records")
		}
		ew.Printf("), %d records outside it\n\n", res.Excluded)
	}
	tw := tabwriter.NewWriter(ew, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "scope\treq\tok\terr\tcancel\tTTFT p50\tp95\tp99\tITL p50\tp95\tp99\tTPOT p95\tE2E p95\tout tok/s\ttot tok/s\treq/s\tgoodput/s\t")
	rows := append([]Stats(nil), res.Profiles...)
	rows = append(rows, res.Overall)
	for _, s := range rows {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%.0f\t%.0f\t%.2f\t%.2f\t\n",
			s.Name, s.Requests, s.OK, s.Errors, s.Cancelled,
			msText(s.TTFT.P50), msText(s.TTFT.P95), msText(s.TTFT.P99),
			msText(s.ITL.P50), msText(s.ITL.P95), msText(s.ITL.P99),
			msText(s.TPOT.P95), msText(s.E2E.P95),
			s.OutputTokensPerSecond, s.TotalTokensPerSecond, s.RequestsPerSecond, s.GoodputPerSecond)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if o := res.Overall; o.Errors > 0 {
		var parts []string
		for _, k := range sortedStatus(o.ErrorsByClass) {
			parts = append(parts, fmt.Sprintf("%s %d", k, o.ErrorsByClass[k]))
		}
		codes := make([]int, 0, len(o.ErrorsByHTTPStatus))
		for c := range o.ErrorsByHTTPStatus {
			codes = append(codes, c)
		}
		sort.Ints(codes)
		for _, c := range codes {
			parts = append(parts, fmt.Sprintf("HTTP %d: %d", c, o.ErrorsByHTTPStatus[c]))
		}
		ew.Printf("\nerrors: %s (rate %.2f%%)\n", strings.Join(parts, ", "), 100*o.ErrorRate)
	}
	c := res.Client
	ew.Printf("\nclient: dispatch lag p99 %s (limit %s)", msText(c.DispatchLagP99Ms), msText(c.LagLimitMs))
	if h := c.Health; h != nil {
		ew.Printf(", CPU %.0f%% of %g cores, scheduler latency p99 %s, %d GC cycles (%.1f%% of its cores)",
			100*h.CPUUtilization, h.CPUCores, msText(h.SchedLatencyP99Ms), h.GCCycles, 100*h.GCCPUShare)
	}
	if c.UnsentLate > 0 {
		ew.Printf(", %d requests due longer than the limit never sent (up to %s)", c.UnsentLate, msText(c.UnsentWaitMaxMs))
	}
	for _, sh := range c.Shards {
		ew.Printf("\n  client shard %d (%s): %d requests, dispatch lag p99 %s, start skew %s", sh.Shard, sh.Name, sh.Requests, msText(sh.DispatchLagP99Ms), msText(sh.StartSkewMs))
		if h := sh.Health; h != nil {
			ew.Printf(", CPU %.0f%% of %g cores", 100*h.CPUUtilization, h.CPUCores)
		}
		if sh.Bound {
			ew.Printf(", client-bound")
		}
	}
	if c.Bound {
		ew.Printf("\nWARNING: client-bound run, latencies are not trustworthy: %s", strings.Join(c.Reasons, "; "))
	}
	var drift []string
	for _, st := range res.Profiles {
		d := st.Drift
		if d.Requests == 0 && d.OutputFill == 0 {
			continue
		}
		part := st.Name
		if d.Requests > 0 {
			part += fmt.Sprintf(" prompt %s (|p95| %s)", fmtSignedPercent(d.PromptMean), fmtPercent(d.PromptAbsP95))
		}
		if d.OutputFill > 0 {
			part += fmt.Sprintf(", output %s of max_tokens", fmtPercent(d.OutputFill))
		}
		if d.ReasoningShare > 0 {
			part += fmt.Sprintf(", %s reasoning", fmtPercent(d.ReasoningShare))
		}
		drift = append(drift, part)
	}
	if len(drift) > 0 {
		ew.Printf("\nplan drift (server vs planned): %s", strings.Join(drift, "; "))
	}
	if res.Drift.Flagged {
		ew.Printf("\nWARNING: prompt drift, the run measured other context lengths than the plan: %s", strings.Join(res.Drift.Reasons, "; "))
	}
	if res.Stream.ITLUnmeasurable {
		ew.Printf("\nWARNING: %s", res.Stream.Reason)
	}
	if res.Settling.Flagged {
		ew.Printf("\nWARNING: %s", strings.Join(res.Settling.Reasons, "; "))
	}
	ew.Printf("\nSLA (%s): %s\n", res.SLA.Scope, res.SLA)
	return ew.Err
}

func sortedStatus(m map[Status]int64) []Status {
	out := make([]Status, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// msText prints milliseconds with a unit that keeps three digits.
func msText(v float64) string {
	if v == 0 {
		return "-"
	}
	return fmtDuration(time.Duration(v * float64(time.Millisecond)))
}
