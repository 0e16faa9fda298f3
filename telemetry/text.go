package telemetry

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// WriteText prints a window's signals as a short human-readable summary:
// engine aggregates, a table of GPUs, stragglers and gaps. Charts are left to
// the report.
func WriteText(w io.Writer, s Signals) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	e := s.Engine
	p := func(format string, a ...any) { fmt.Fprintf(tw, format, a...) }
	p("window\t%s – %s (%s)\n", s.Start.Format(time.RFC3339), s.End.Format(time.RFC3339), s.End.Sub(s.Start).Round(time.Second))
	if e.Running.Samples > 0 || e.Waiting.Samples > 0 {
		p("requests running\tmean %.1f\tmax %.0f\n", e.Running.Mean, e.Running.Max)
		p("requests waiting\tmean %.1f\tmax %.0f\n", e.Waiting.Mean, e.Waiting.Max)
	}
	if e.KVCacheUsage.Samples > 0 {
		p("KV-cache usage\tp50 %.1f %%\tmax %.1f %%\n", 100*e.KVCacheUsage.P50, 100*e.KVCacheUsage.Max)
	}
	if e.PrefixCacheQueries > 0 {
		p("prefix-cache hit rate\t%.1f %%\t(%.0f of %.0f tokens)\n", 100*e.PrefixCacheHitRate, e.PrefixCacheHits, e.PrefixCacheQueries)
	}
	p("preemptions\t%.0f\n", e.Preemptions)
	p("tokens\tprompt %.0f\tgenerated %.0f\n", e.PromptTokens, e.GenerationTokens)
	for _, q := range []struct {
		name string
		q    Quantiles
	}{{"server TTFT", e.TTFT}, {"server ITL", e.ITL}, {"server E2E", e.E2E}, {"queue time", e.QueueTime}} {
		if q.q.Count > 0 {
			p("%s\tp50 %s\tp90 %s\tp99 %s\t(n=%.0f)\n", q.name, secs(q.q.P50), secs(q.q.P90), secs(q.q.P99), q.q.Count)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(s.GPUs) > 0 {
		fmt.Fprintln(w)
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "GPU\tSM active\tDRAM active\ttensor active\tSM MHz (min)\ttemp °C (max)\tpower W\tthrottle")
		for _, g := range s.GPUs {
			reasons := strings.Join(g.ThrottleReasons, ",")
			if reasons == "" {
				reasons = "-"
			}
			fmt.Fprintf(tw, "%s\t%.1f %%\t%.1f %%\t%.1f %%\t%.0f (%.0f)\t%.0f (%.0f)\t%.0f\t%s\n", g.Name(),
				100*g.SMActive.Mean, 100*g.DRAMActive.Mean, 100*g.TensorActive.Mean,
				g.SMClockMHz.Mean, g.SMClockMHz.Min, g.TemperatureC.Mean, g.TemperatureC.Max, g.PowerW.Mean, reasons)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	for _, st := range s.Stragglers {
		fmt.Fprintf(w, "\nstraggler %s: %s – %s (%d samples): %s", st.Name(), st.Start.Format(time.RFC3339), st.End.Format(time.RFC3339), st.Samples, strings.Join(st.Reasons, ", "))
		if st.PeerMedianMHz > 0 {
			fmt.Fprintf(w, "; SM clock %.0f MHz vs peers' median %.0f MHz", st.ClockMHz, st.PeerMedianMHz)
		}
		fmt.Fprintln(w)
	}
	for _, g := range s.Gaps {
		fmt.Fprintf(w, "\ngap in %q: %s – %s (%d failed scrapes): %s\n", g.Target, g.Start.Format(time.RFC3339), g.End.Format(time.RFC3339), g.Scrapes, g.Error)
	}
	return nil
}

func secs(v float64) string {
	if v < 1 {
		return fmt.Sprintf("%.0f ms", v*1000)
	}
	return fmt.Sprintf("%.2f s", v)
}
