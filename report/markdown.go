package report

import (
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"

	"github.com/spoc-project/spoc/plan"
)

// Markdown writes the plan's verdict and key tables as Markdown
// (summary.md): readable in a terminal, a pull request or a wiki. Every
// string from the plan is escaped; the serve command sits in a code block.
func Markdown(w io.Writer, d *plan.Summary) error {
	if d == nil {
		return fmt.Errorf("render Markdown summary: nil data")
	}
	p := newPage(d)
	var b strings.Builder
	fmt.Fprintf(&b, "# %s\n\n", mdEscape(d.Title))
	if d.Quick {
		b.WriteString("> **Quick plan**: short windows and few trials; the numbers are indicative only.\n\n")
	}
	c := d.Capacity
	if c.Users > 0 {
		ceiling := strconv.Itoa(c.Users)
		if e := c.Estimate; e != nil && e.Bounded {
			ceiling += " " + plan.IntervalText(e)
		} else if iv := c.CeilingInterval; iv != nil {
			ceiling += fmt.Sprintf(" [%d, %d]", iv.Lo, iv.Hi)
		}
		fmt.Fprintf(&b, "**Capacity: %s concurrent users** of this workload on %d× %s (%s, TP %d)", ceiling, d.Engine.GPUs, mdEscape(d.Engine.GPU), mdEscape(d.Engine.Model), d.Engine.TensorParallelSize)
	} else {
		fmt.Fprintf(&b, "**No user count met the SLA** on %d× %s (%s, TP %d)", d.Engine.GPUs, mdEscape(d.Engine.GPU), mdEscape(d.Engine.Model), d.Engine.TensorParallelSize)
	}
	if p.SimRun {
		b.WriteString(", simulated (virtual time)")
	}
	b.WriteString(".\n\n")
	// "Source", as the CLI says: a simulated number was not measured
	fmt.Fprintf(&b, "Source: %s.\n\n", mdEscape(c.Provenance.String()))
	switch {
	case c.FirstFailingUsers > 0 && c.Estimate != nil:
		// the walk's first failure is one seed's, not where the estimate's
		// runs on fresh seeds start to fail
		fmt.Fprintf(&b, "The walk on workload.seed first failed at %d users, on %s. The capacity above is estimated from runs on fresh workload seeds instead, whose verdicts turn elsewhere; its binding clause is %s.\n\n",
			c.FirstFailingUsers, mdEscape(c.FailedClause), mdEscape(c.Estimate.Binding))
	case c.FirstFailingUsers > 0:
		fmt.Fprintf(&b, "Above it, at %d users, the SLA fails first on: %s.\n\n", c.FirstFailingUsers, mdEscape(c.FailedClause))
	}
	writeCeilingMarkdown(&b, d)
	fmt.Fprintf(&b, "SLA (%s): %s\n\n", mdEscape(d.SLA.Scope), mdEscape(p.SLAText))
	bound := "not client-bound"
	if d.Client.ClientBound {
		bound = "**client-bound**: the load generator limited the run"
	}
	fmt.Fprintf(&b, "Client validity: %s, dispatch lag p99 %s", bound, fmtMs(d.Client.DispatchLagP99Ms))
	if d.Client.Virtual {
		b.WriteString(", virtual time")
	}
	b.WriteString(".\n")
	for _, r := range d.Client.Reasons {
		fmt.Fprintf(&b, "- %s\n", mdEscape(r))
	}
	fmt.Fprintf(&b, "\nChosen configuration, from %s:\n\n", mdEscape(choice(c)))
	if c.ServeCommand == "" && c.ServerFlags != "" {
		fmt.Fprintf(&b, "Server flags: %s\n", mdEscape(c.ServerFlags))
	} else {
		writeFence(&b, commandLines(c.ServeCommand))
	}

	if w := d.Workload; w != nil {
		b.WriteString("## Workload\n\n| profile | share | context at start p50 | end p50 | turns p50 | growth per turn | ideal hit rate |\n|---|---:|---:|---:|---:|---:|---:|\n")
		for _, r := range p.Workload.Profiles {
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %d | %s | %s |\n", mdEscape(r.Name), fmtPct(r.Share), fmtNum(float64(r.StartP50)), fmtNum(float64(r.EndP50)), r.Turns, fmtNum(r.GrowthPerTurn), fmtPct(r.IdealHR))
		}
		fmt.Fprintf(&b, "\nPrefix cache: ideal hit rate %s (first turns %s)", fmtPct(w.Prefix.IdealHitRate), fmtPct(w.Prefix.FirstTurnHitRate))
		if p.HasMeasured {
			fmt.Fprintf(&b, ", measured %s (%s)", fmtPct(p.Measured), mdEscape(p.MeasuredSrc))
		}
		b.WriteString(".\n\n")
	}
	if s := p.Search; s != nil && len(s.Front) > 0 {
		fmt.Fprintf(&b, "## Search\n\nThe %s.", mdEscape(s.FrontLabel))
		if n := d.Search.Parallel; n > 1 {
			fmt.Fprintf(&b, " The study ran up to %d trials at once (search.parallel).", n)
		}
		b.WriteString("\n\n| trial |")
		for _, o := range s.Objectives {
			fmt.Fprintf(&b, " %s |", mdEscape(objectiveLabel(o)))
		}
		for _, n := range s.ParamNames {
			fmt.Fprintf(&b, " %s |", mdEscape(n))
		}
		b.WriteString("\n|---:|" + strings.Repeat("---:|", len(s.Objectives)+len(s.ParamNames)) + "\n")
		for _, r := range s.Front {
			mark := ""
			if r.Chosen {
				mark = " (chosen)"
			}
			fmt.Fprintf(&b, "| #%d%s |", r.Number, mark)
			for _, v := range r.Values {
				fmt.Fprintf(&b, " %s |", v)
			}
			for _, v := range r.Params {
				fmt.Fprintf(&b, " %s |", mdEscape(v))
			}
			b.WriteString("\n")
		}
		b.WriteString("\n")
	}
	if len(d.Candidates) > 0 {
		b.WriteString("## Candidates\n\n| candidate | ceiling | fails first on | tie-break |\n|---|---:|---|---|\n")
		for _, cd := range d.Candidates {
			label := fmt.Sprintf("trial #%d", cd.Trial)
			if cd.Trial < 0 {
				label = "baseline"
			}
			if cd.Chosen {
				label += " (chosen)"
			}
			tie := "–"
			switch {
			case cd.TieBreak != "":
				tie = mdEscape(cd.TieBreak)
			case cd.FullCeiling > 0:
				// summaries of plans that broke ties with full sweeps
				tie = "full-sweep ceiling " + strconv.Itoa(cd.FullCeiling)
			}
			fmt.Fprintf(&b, "| %s | %d | %s | %s |\n", label, cd.Ceiling, mdEscape(cd.FailedClause), tie)
		}
		b.WriteString("\n")
	}
	if len(d.Sweep) > 0 {
		// the latency columns are over all profiles; a per-profile binding
		// clause gets its own column
		head, cells := bindingColumn(d)
		bh, bsep := "", ""
		if head != "" {
			bh, bsep = " "+mdEscape(head)+" (binding) |", "---:|"
		}
		fmt.Fprintf(&b, "## Sweep\n\n| users | verdict | output tok/s |%s TTFT p95 all | ITL p95 all | KV usage | prefix hits |\n|---:|---|---:|%s---:|---:|---:|---:|\n", bh, bsep)
		for i, s := range d.Sweep {
			v := mdEscape(s.Verdict())
			kv, hits := "–", "–" // unmeasured, not zero
			if s.HasEngineTelemetry() {
				kv, hits = fmtPct(s.KVCacheUsageMean), fmtPct(s.PrefixCacheHitRate)
			}
			bc := ""
			if head != "" {
				bc = " " + cells[i] + " |"
			}
			fmt.Fprintf(&b, "| %d | %s | %.0f |%s %s | %s | %s | %s |\n", s.Users, v, s.OutputThroughput, bc, fmtMs(s.TTFTP95Ms), fmtMs(s.ITLP95Ms), kv, hits)
		}
		b.WriteString("\n")
	}
	if t := p.Telemetry; t != nil && len(t.GPUs) > 0 {
		b.WriteString("## GPUs at the ceiling\n\n")
		if p.SimRun {
			b.WriteString("Simulated: the simulator's model of the GPUs' DCGM signals, not hardware readings.\n\n")
		}
		b.WriteString("| GPU | SM active | DRAM active | SM clock MHz | temp max °C | straggler |\n|---|---:|---:|---:|---:|---|\n")
		for _, g := range t.GPUs {
			flag := ""
			if g.Straggler {
				flag = "yes"
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s |\n", mdEscape(g.Name), g.SM, g.DRAM, g.ClockMean, g.TempMax, flag)
		}
		b.WriteString("\n")
	}
	if k := p.Kernels; k != nil {
		fmt.Fprintf(&b, "## Kernels\n\nTrace %s.\n\n| category | share of kernel time |\n|---|---:|\n", mdEscape(k.File))
		for _, ct := range d.Kernels.Breakdown.Categories {
			fmt.Fprintf(&b, "| %s | %s |\n", mdEscape(string(ct.Name)), fmtPct(ct.Share))
		}
		b.WriteString("\n")
		if len(k.RoofRows) > 0 {
			b.WriteString("| term | measured |")
			for _, h := range k.RoofHeads {
				fmt.Fprintf(&b, " %s predicted |", mdEscape(h))
			}
			b.WriteString("\n|---|---:|" + strings.Repeat("---:|", len(k.RoofHeads)) + "\n")
			for _, r := range k.RoofRows {
				fmt.Fprintf(&b, "| %s | %s |", mdEscape(r.Key), r.Measured)
				for _, c := range r.Cells {
					fmt.Fprintf(&b, " %s |", c)
				}
				b.WriteString("\n")
			}
			b.WriteString("\n")
		}
		if len(k.Top) > 0 {
			b.WriteString("| category | top kernel | share of category |\n|---|---|---:|\n")
			for _, r := range k.Top {
				fmt.Fprintf(&b, "| %s | %s | %s |\n", mdEscape(r.Category), mdEscape(truncate(r.Name, 200)), r.Share)
			}
			b.WriteString("\n")
		}
	}
	if len(d.Compare) > 0 {
		b.WriteString("## Hardware comparison\n\n| target | GPUs | ceiling | users/GPU | ratio | calibration |\n|---|---:|---:|---:|---:|---|\n")
		for _, r := range d.Compare {
			cal := "–"
			if x := d.Envelope.TargetOutside(r.Name); x != "" {
				cal = "⚠ outside: " + x
			} else if d.Envelope != nil {
				cal = "inside"
			}
			fmt.Fprintf(&b, "| %s | %d× %s | %d | %.1f | %.2f | %s |\n", mdEscape(r.Name), r.GPUs, mdEscape(r.GPU), r.Users, r.UsersPerGPU, r.Ratio, mdEscape(cal))
		}
		b.WriteString("\n")
	}
	writeCostMarkdown(&b, d.Cost)
	writeDayMarkdown(&b, d)
	writeFidelityMarkdown(&b, d.Fidelity)
	writeCalibrationMarkdown(&b, d.Envelope)
	if len(d.Assumptions) > 0 {
		b.WriteString("## Assumptions\n\n| field | value | note |\n|---|---|---|\n")
		for _, a := range d.Assumptions {
			value, note := a.Value, a.Note
			if a.Automatic != "" {
				value, note = value+" (automatic)", note+"; "+a.Automatic
			}
			fmt.Fprintf(&b, "| %s | %s | %s |\n", mdEscape(a.Field), mdEscape(value), mdEscape(note))
		}
		b.WriteString("\n")
	}
	if len(d.Notes)+len(p.Missing) > 0 {
		b.WriteString("## Notes\n\n")
		for _, n := range d.Notes {
			fmt.Fprintf(&b, "- %s\n", mdEscape(n))
		}
		for _, n := range p.Missing {
			fmt.Fprintf(&b, "- %s\n", mdEscape(n))
		}
		b.WriteString("\n")
	}
	if _, err := io.WriteString(w, b.String()); err != nil {
		return fmt.Errorf("write Markdown summary: %w", err)
	}
	return nil
}

// writeFence writes s as a fenced code block whose fence is longer than any
// backtick run inside s, so s cannot close it.
func writeFence(b *strings.Builder, s string) {
	fence := "```"
	for strings.Contains(s, fence) {
		fence += "`"
	}
	fmt.Fprintf(b, "%s\n%s\n%s\n\n", fence, s, fence)
}

// mdEscape makes s inert Markdown text on one line (no markup, no HTML, no
// table break) while escaping only what Markdown would otherwise read as
// markup: "a > b", "ttft_p95" and "x & y" stay as they are, so summary.md
// reads well raw. Balanced `code spans` stay code spans (their content is
// literal in Markdown); a lone backtick is escaped.
func mdEscape(s string) string {
	s = strings.NewReplacer("\r\n", " ", "\n", " ", "\r", " ").Replace(s)
	// Single backticks in pairs open and close spans left to right, as
	// CommonMark reads them; longer runs are escaped, never interpreted.
	codeSpans := strings.Count(s, "`")%2 == 0 && !strings.Contains(s, "``")
	var b strings.Builder
	inCode := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		esc := false
		switch {
		case c == '`' && codeSpans:
			inCode = !inCode
		case inCode:
			esc = c == '|' // code spans are literal, but a table still splits on |
		}
		switch {
		case inCode || c == '`' && codeSpans:
		default:
			esc = esc || mdNeedsEscape(s, i)
		}
		if esc {
			b.WriteByte('\\')
		}
		b.WriteByte(c)
	}
	return b.String()
}

// mdNeedsEscape says whether s[i], outside a code span, would be read as
// markup.
func mdNeedsEscape(s string, i int) bool {
	at := func(i int) byte {
		if i < 0 || i >= len(s) {
			return ' '
		}
		return s[i]
	}
	word := func(c byte) bool {
		return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0x80
	}
	esc := false
	switch s[i] {
	case '|':
		esc = true // table cell break
	case ']':
		n := at(i + 1)
		esc = n == '(' || n == '[' || n == ':' // links; a bare [0] is literal
	case '\\':
		esc = strings.IndexByte(mdPunct, at(i+1)) >= 0
	case '<':
		n := at(i + 1)
		esc = n == '/' || n == '!' || n == '?' || word(n) // tags, autolinks
	case '>', '#':
		esc = i == 0 // blockquote, heading
	case '-', '+', '=':
		esc = i == 0 && at(i+1) == ' ' // list item, setext heading
	case '&':
		esc = mdEntity.MatchString(s[i:])
	case '*':
		esc = i == 0 || at(i-1) != ' ' || at(i+1) != ' ' // list item; emphasis unless spaced
	case '_':
		esc = !word(at(i-1)) || !word(at(i+1)) // intraword _ is literal
	case '~':
		esc = at(i+1) == '~' || at(i-1) == '~' // strikethrough
	case '`':
		esc = true // a lone backtick: balanced ones are code spans
	}
	return esc
}

// mdPunct is the ASCII punctuation a backslash escapes in CommonMark.
const mdPunct = "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"

// mdEntity matches an HTML entity or character reference that Markdown
// would decode.
var mdEntity = regexp.MustCompile(`^&(#[0-9]{1,7}|#[xX][0-9a-fA-F]{1,6}|[A-Za-z][A-Za-z0-9]{1,31});`)
