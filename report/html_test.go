package report_test

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/spoc-project/spoc/capacity"
	"github.com/spoc-project/spoc/plan"
	"github.com/spoc-project/spoc/report"
	"github.com/spoc-project/spoc/result"
	"github.com/spoc-project/spoc/search"
	"github.com/spoc-project/spoc/trace"
	"github.com/spoc-project/spoc/workload"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden")

// maxReportBytes is the size budget of a report (issue: under 5 MB).
const maxReportBytes = 5 << 20

var (
	sectionRE = regexp.MustCompile(`<section id="([^"]+)">|</section>`)
	headingRE = regexp.MustCompile(`<h([1-3])>(.*?)</h[1-3]>`)
	headerRE  = regexp.MustCompile(`<th[^>]*>(.*?)</th>`)
	tagRE     = regexp.MustCompile(`<[^>]+>`)
)

// structure reduces a page to its skeleton: each section with its
// headings, table headers and chart count. Data values are left out so the
// golden file changes when the layout does, not when the numbers do.
func structure(page string) string {
	var b strings.Builder
	idx := sectionRE.FindAllStringSubmatchIndex(page, -1)
	if m := headingRE.FindStringSubmatch(page[:idx[0][0]]); m != nil {
		fmt.Fprintf(&b, "h%s %s\n", m[1], m[2])
	}
	for i := 0; i+1 < len(idx); i += 2 {
		body := page[idx[i][1]:idx[i+1][0]]
		fmt.Fprintf(&b, "section %s: %d charts\n", page[idx[i][2]:idx[i][3]], strings.Count(body, "<svg"))
		for _, line := range strings.Split(body, "\n") {
			for _, m := range headingRE.FindAllStringSubmatch(line, -1) {
				fmt.Fprintf(&b, "  h%s %s\n", m[1], tagRE.ReplaceAllString(m[2], ""))
			}
			var hs []string
			for _, m := range headerRE.FindAllStringSubmatch(line, -1) {
				hs = append(hs, tagRE.ReplaceAllString(m[1], ""))
			}
			if len(hs) > 0 {
				fmt.Fprintf(&b, "  table: %s\n", strings.Join(hs, " | "))
			}
		}
	}
	return b.String()
}

func render(t testing.TB, d *plan.Summary) string {
	t.Helper()
	var buf bytes.Buffer
	if err := report.HTML(&buf, d); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

func golden(t *testing.T, path, got string) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./report -update)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs (go test ./report -update rewrites it):\n--- got\n%s", path, got)
	}
}

// TestHTMLStructureGolden pins the report's skeleton on the default plan's
// data with every section filled.
func TestHTMLStructureGolden(t *testing.T) {
	golden(t, "testdata/structure.golden", structure(render(t, fixture(t))))
}

// TestHTMLStructureEmpty renders a plan with nothing collected: every
// section still present, each saying what is missing.
func TestHTMLStructureEmpty(t *testing.T) {
	d := &plan.Summary{Title: "empty", SLA: result.DefaultSLA(), Capacity: plan.Capacity{ChosenTrial: -1}}
	page := render(t, d)
	golden(t, "testdata/structure-empty.golden", structure(page))
	for _, want := range []string{"No user count met the SLA", "Telemetry was not collected", "No kernel trace was analysed", "No sweep was recorded", "No parameter search ran", "Workload inspection was not recorded"} {
		if !strings.Contains(page, want) {
			t.Errorf("empty report lacks %q", want)
		}
	}
}

// hostile is a plan whose every user-provided string tries to inject markup.
func hostile() *plan.Summary {
	const s = `<script>alert("x")</script>`
	bd := &trace.Breakdown{Source: "trace" + s + ".sqlite",
		Categories: []trace.CategoryTime{{Name: trace.Attention, TimeNS: 600, Share: 0.6, Count: 1, TopKernels: []trace.KernelTime{{Name: "attn_kernel" + s, Category: trace.Attention, TimeNS: 600, Share: 1}}},
			{Name: trace.Other, TimeNS: 400, Share: 0.4, Count: 1}},
		KernelTimeNS:   1000,
		GPUs:           []trace.GPUBreakdown{{Device: 0, Name: "GPU" + s, Categories: []trace.CategoryTime{{Name: trace.Attention, TimeNS: 600, Share: 0.6}, {Name: trace.Other, TimeNS: 400, Share: 0.4}}}},
		UnknownKernels: []trace.KernelTime{{Name: s + "_unknown_kernel", Category: trace.Other, TimeNS: 400, Share: 0.4}},
	}
	return &plan.Summary{
		Title: "plan " + s, Generated: time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC), SpocVersion: s,
		Engine: plan.Engine{Kind: "sim", Model: "gpt-oss" + s, GPU: "H100" + s, GPUs: 4, TensorParallelSize: 4},
		SLA:    result.DefaultSLA(),
		Workload: &workload.Inspection{Sessions: 1, Requests: 2, Profiles: []workload.ProfileSummary{{Name: "P0" + s, Share: 1, TurnsP50: 3, ContextStartP50: 100, ContextEndP50: 300}},
			Prefix: workload.PrefixSummary{IdealHitRate: 0.5, Split: map[string]float64{"root" + s: 1}}},
		Capacity: plan.Capacity{Users: 10, FirstFailingUsers: 12, FailedClause: "P0" + s + " ttft", ServeCommand: "vllm serve gpt-oss" + s, Config: map[string]any{"flag" + s: s}, ChosenTrial: 3, ChosenBy: s},
		Sweep: []plan.SweepPoint{{Users: 10, Pass: true, Requests: 5, TTFTP95Ms: 100, Profiles: []plan.ProfilePoint{{Name: "P0" + s, Requests: 5, TTFTP95Ms: 90}}},
			{Users: 12, FailedClause: s, Requests: 5, TTFTP95Ms: 3000}},
		Search: &plan.Search{Study: s, Sampler: "nsga2", Users: 10, Objectives: []plan.Objective{{Metric: "tput" + s, Direction: "maximize", Unit: "tok/s"}, {Metric: "ttft", Direction: "minimize", Unit: "ms"}},
			Trials:    []plan.Member{{Number: 3, Params: map[string]any{"p" + s: s}, Values: []float64{1, 2}, Feasible: true, OnFront: true}, {Number: 4, Params: map[string]any{"p" + s: 1.5}, Values: []float64{0.5, 3}}},
			Influence: []plan.Influence{{Param: "p" + s, Objective: "ttft", Correlation: 0.5}}, Params: []search.ParamSpec{{Name: "p" + s, Doc: s}}},
		Candidates:  []plan.Candidate{{Trial: 3, Params: map[string]any{"p" + s: s}, Ceiling: 10, FailedClause: s, Chosen: true}},
		Client:      plan.Client{Reasons: []string{s}, ClientBound: true},
		Kernels:     &plan.Kernels{File: "f" + s, Breakdown: bd},
		Compare:     []plan.CompareRow{{Name: s, GPU: s, GPUs: 1, Users: 3}},
		Assumptions: []plan.Assumption{{Field: s, Value: s, Note: s}},
		Phases:      []plan.Phase{{Name: s, Detail: s}},
		Notes:       []string{s},
	}
}

// TestHTMLEscapes checks that markup in a model name, a kernel name and
// every other user-provided string arrives as text, in HTML and in SVG.
func TestHTMLEscapes(t *testing.T) {
	page := render(t, hostile())
	if strings.Contains(strings.ToLower(page), "<script") {
		i := strings.Index(strings.ToLower(page), "<script")
		t.Fatalf("unescaped <script> in the page: …%s…", page[max(i-200, 0):min(i+100, len(page))])
	}
	for _, want := range []string{
		"gpt-oss&lt;script&gt;",          // model name, HTML text
		"attn_kernel&lt;script&gt;",      // kernel name in its title attribute
		"&lt;/script&gt;_unknown_kernel", // uncategorised kernel
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks escaped %q", want)
		}
	}
	// Inside the SVG charts: the profile (sweep legend and hover text) and
	// the GPU (kernel bars).
	var svgs strings.Builder
	for _, part := range strings.Split(page, "<svg")[1:] {
		svgs.WriteString(part[:strings.Index(part, "</svg>")])
	}
	for _, want := range []string{"P0&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;", "(GPU&lt;script&gt;"} {
		if !strings.Contains(svgs.String(), want) {
			t.Errorf("SVG lacks escaped %q", want)
		}
	}
}

// TestMarkdownEscapes: the same hostile plan as Markdown carries no markup.
func TestMarkdownEscapes(t *testing.T) {
	var buf bytes.Buffer
	if err := report.Markdown(&buf, hostile()); err != nil {
		t.Fatal(err)
	}
	md := buf.String()
	// Outside code blocks (where text is shown verbatim, never interpreted)
	// no markup may survive.
	var prose strings.Builder
	for i, part := range strings.Split(md, "```") {
		if i%2 == 0 {
			prose.WriteString(part)
		}
	}
	if strings.Contains(strings.ReplaceAll(prose.String(), "\\<", ""), "<script") {
		t.Fatalf("unescaped <script> in Markdown:\n%s", md)
	}
	for _, want := range []string{"gpt-oss\\<script>", "attn_kernel\\<script>", "## Kernels", "## Search", "## Sweep", "## Assumptions", "## Notes"} {
		if !strings.Contains(md, want) {
			t.Errorf("Markdown lacks %q", want)
		}
	}
	// The serve command is in a fence: verbatim, markup included, inert.
	if !strings.Contains(md, "```\nvllm serve gpt-oss<script>") {
		t.Errorf("serve command not fenced:\n%s", md)
	}
}

// TestMarkdownEscapesOnlyMarkup: text Markdown would show as it is stays
// as it is (summary.md is read raw too); what it would read as markup is
// escaped; balanced code spans stay code.
func TestMarkdownEscapesOnlyMarkup(t *testing.T) {
	d := &plan.Summary{Title: "plan", SLA: result.DefaultSLA(), Notes: []string{
		"P2 ttft p95 2.32s > 2s & ttft_p95 rose; `spoc trace recipe` prints it",
		"a|b [x](y) <b>bold</b> _em_ *em* 2 * 3 &amp; lone ` tick",
	}}
	var buf bytes.Buffer
	if err := report.Markdown(&buf, d); err != nil {
		t.Fatal(err)
	}
	md := buf.String()
	for _, want := range []string{
		"- P2 ttft p95 2.32s > 2s & ttft_p95 rose; `spoc trace recipe` prints it\n",
		"- a\\|b [x\\](y) \\<b>bold\\</b> \\_em\\_ \\*em\\* 2 * 3 \\&amp; lone \\` tick\n",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("Markdown lacks %q:\n%s", want, md)
		}
	}
}

// TestMarkdownFixture checks the summary of the default plan names the
// verdict, the failing clause and every assumption.
func TestMarkdownFixture(t *testing.T) {
	d := fixture(t)
	var buf bytes.Buffer
	if err := report.Markdown(&buf, d); err != nil {
		t.Fatal(err)
	}
	md := buf.String()
	for _, want := range []string{fmt.Sprintf("**Capacity: %d (95 %% confidence ", d.Capacity.Users), "Source: simulated", "Simulated: the simulator's model of the GPUs'", "fails first on", "```\nvllm serve", "## Workload", "## Kernels", "| W4A16 predicted |", "## Hardware comparison"} {
		if !strings.Contains(md, want) {
			t.Errorf("summary.md lacks %q", want)
		}
	}
	for _, a := range d.Assumptions {
		if !strings.Contains(md, a.Field) {
			t.Errorf("assumption %s missing from summary.md", a.Field)
		}
	}
}

// TestHTMLSize: the default plan's report stays under the 5 MB budget
// (quick plan in-process, and the full default plan's data in testdata).
func TestHTMLSize(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a quick plan")
	}
	for name, d := range map[string]*plan.Summary{"quick plan": quickPlanData(t), "default plan": fixture(t)} {
		n := len(render(t, d))
		t.Logf("%s: report %d bytes", name, n)
		if n > maxReportBytes {
			t.Errorf("%s: report is %d bytes, budget %d", name, n, maxReportBytes)
		}
	}
}

// TestHTMLAssumptionsAndNotes: every assumption row and note is printed.
func TestHTMLAssumptionsAndNotes(t *testing.T) {
	d := fixture(t)
	d.Notes = append(d.Notes, "a note the reader must see")
	d.Assumptions = append(d.Assumptions, plan.Assumption{Field: "search.users", Value: "162", Automatic: "set automatically: the baseline's ceiling", Note: "not published"})
	page := render(t, d)
	if want := `<td class="l">162 (automatic)</td><td class="wrap">not published; set automatically: the baseline&#39;s ceiling</td>`; !strings.Contains(page, want) {
		t.Errorf("the automatic search.users is not shown as %s", want)
	}
	for _, a := range d.Assumptions {
		if !strings.Contains(page, "<code>"+a.Field+"</code>") {
			t.Errorf("assumption %s not printed", a.Field)
		}
	}
	if !strings.Contains(page, "a note the reader must see") {
		t.Error("note not printed")
	}
	if !strings.Contains(page, `http-equiv="Content-Security-Policy"`) {
		t.Error("no Content-Security-Policy")
	}
	for _, bad := range []string{"<script", "<link", "@import", "url(", "src=\"http", "href=\"http"} {
		if strings.Contains(page, bad) {
			t.Errorf("page contains %q: it must load nothing", bad)
		}
	}
}

func BenchmarkHTMLDefaultPlan(b *testing.B) {
	d := fixture(b)
	var buf bytes.Buffer
	b.ReportAllocs()
	for b.Loop() {
		buf.Reset()
		if err := report.HTML(&buf, d); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(buf.Len()), "bytes/report")
}

// A live plan's headline says the weight format is what the configuration
// named: spoc does not read it from the server. A simulated one models it.
func TestHTMLWeightFormatIsConfiguredOnLivePlans(t *testing.T) {
	d := fixture(t)
	d.Engine.WeightFormat = "mxfp4"
	d.Engine.Kind, d.Client.Virtual = "process", false
	if page := render(t, d); !strings.Contains(page, "weights configured as mxfp4, not read from the server") {
		t.Errorf("live headline does not qualify the weight format:\n%s", headline(page))
	}
	d.Engine.Kind, d.Client.Virtual = "sim", true
	if page := render(t, d); !strings.Contains(page, "TP 4, mxfp4 weights)") {
		t.Errorf("simulated headline lacks the modelled weight format:\n%s", headline(page))
	}
}

func headline(page string) string {
	i := strings.Index(page, `<div class="what">`)
	if i < 0 {
		return page
	}
	return page[i:min(len(page), i+600)]
}

// TestCandidatesTieBreak: a tie on the ceiling is explained in the
// Candidates table (HTML and Markdown); without one the column is absent.
func TestCandidatesTieBreak(t *testing.T) {
	d := fixture(t)
	d.Candidates = []plan.Candidate{
		{Trial: -1, Ceiling: 162},
		{Trial: 27, Ceiling: 165, Chosen: true, TieBreak: "chosen on a tie at 165 users with trial #58: a tie goes to the higher study throughput"},
		{Trial: 58, Ceiling: 165, TieBreak: "tied with trial #27 at 165 users; not chosen: a tie goes to the higher study throughput (9050 vs 8800 tok/s)"},
	}
	page := render(t, d)
	for _, want := range []string{`<th class="l">tie-break</th>`,
		`<td class="wrap">tied with trial #27 at 165 users; not chosen: a tie goes to the higher study throughput (9050 vs 8800 tok/s)</td>`,
		`<td class="wrap">chosen on a tie at 165 users with trial #58: a tie goes to the higher study throughput</td>`} {
		if !strings.Contains(page, want) {
			t.Errorf("report.html lacks %s", want)
		}
	}
	var md bytes.Buffer
	if err := report.Markdown(&md, d); err != nil {
		t.Fatal(err)
	}
	if want := "| trial #58 | 165 |  | tied with trial #27 at 165 users; not chosen: a tie goes to the higher study throughput (9050 vs 8800 tok/s) |"; !strings.Contains(md.String(), want) {
		t.Errorf("summary.md lacks %s\n%s", want, md.String())
	}
	for i := range d.Candidates {
		d.Candidates[i].TieBreak = ""
	}
	if page := render(t, d); strings.Contains(page, "tie-break") {
		t.Error("a tie-break column without a tie")
	}
}

// TestSweepBindingColumn: the sweep table's latency columns say they are
// over all profiles, and a per-profile binding clause (P2 ttft p95) gets a
// column with that profile's value at each level; an overall clause
// needs none.
func TestSweepBindingColumn(t *testing.T) {
	d := fixture(t)
	d.Capacity.BindingMargin = &capacity.Margin{Scope: "P2", Clause: "ttft p95", Limit: 2, AtCeiling: 1.7, AtFirstFailing: 2.1}
	d.Sweep = []plan.SweepPoint{{Users: 165, Pass: true, TTFTP95Ms: 900,
		Profiles: []plan.ProfilePoint{{Name: "P0", Requests: 10, TTFTP95Ms: 700}, {Name: "P2", Requests: 4, TTFTP95Ms: 1702}}}}
	page := render(t, d)
	for _, want := range []string{"<th>P2 TTFT p95 (binding)</th><th>TTFT p50 all</th><th>TTFT p95 all</th>",
		"<td>1.70 s</td><td>", "<td>900 ms</td>"} {
		if !strings.Contains(page, want) {
			t.Errorf("report.html lacks %s", want)
		}
	}
	var md bytes.Buffer
	if err := report.Markdown(&md, d); err != nil {
		t.Fatal(err)
	}
	if want := "| users | verdict | output tok/s | P2 TTFT p95 (binding) | TTFT p95 all |"; !strings.Contains(md.String(), want) {
		t.Errorf("summary.md lacks %s", want)
	}
	if want := "| 165 | pass | 0 | 1.70 s | 900 ms |"; !strings.Contains(md.String(), want) {
		t.Errorf("summary.md lacks %s", want)
	}
	d.Capacity.BindingMargin.Scope = "overall"
	if page := render(t, d); strings.Contains(page, "(binding)</th>") || !strings.Contains(page, "<th>TTFT p95 all</th>") {
		t.Error("an overall clause gets a binding column, or the all-profile columns lost their label")
	}
}

// The influence table holds rank correlations, which have no unit: its
// column heads name the objective and its direction, never ms or s (the
// values below them are not latencies).
func TestInfluenceHeadsCarryNoUnit(t *testing.T) {
	var b strings.Builder
	if err := report.HTML(&b, fixture(t)); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	i := strings.Index(page, `<table class="heat">`)
	if i < 0 {
		t.Fatal("no influence table in the fixture's report")
	}
	head := page[i:]
	head = head[:strings.Index(head, "</thead>")]
	if !strings.Contains(head, "ttft_p95 (↓ better)") {
		t.Errorf("influence heads lack the objective and its direction: %s", head)
	}
	for _, unit := range []string{", ms", ", s "} {
		if strings.Contains(head, unit) {
			t.Errorf("influence heads carry a unit %q over unitless correlations: %s", unit, head)
		}
	}
}

// A sweep level with too few samples to judge a clause is neither a pass
// nor a fail: summary.md, the report's table and the chart's tooltips say
// "unjudged" and name the clause, never "fail".
func TestUnjudgedLevelIsNoFailure(t *testing.T) {
	d := fixture(t)
	if len(d.Sweep) == 0 {
		t.Fatal("the fixture has no sweep")
	}
	s := &d.Sweep[0]
	s.Pass, s.FailedClause = false, ""
	s.Insufficient, s.FewSamplesPass, s.UnjudgedClause = true, true, "P2 ttft p95"
	want := "unjudged: too few samples for P2 ttft p95; the values measured met the SLA"
	page := render(t, d)
	line := sweepRow(t, d, s.Users)
	if !strings.Contains(line, want) || strings.Contains(line, "fail") {
		t.Errorf("summary.md's row for an unjudged level: %s\nwant %q and no fail", line, want)
	}
	if n := strings.Count(page, want); n < 2 {
		t.Errorf("report.html says %q %d times, want it in the sweep table and the chart's tooltip", want, n)
	}
	if strings.Contains(page, fmt.Sprintf("%d users, overall: ", s.Users)) && strings.Contains(page, "(fail: )") {
		t.Error("report.html has a tooltip reading (fail: ) with no clause")
	}
}

// A sweep level whose run was still settling when its window opened says
// so beside its verdict in summary.md, the report's table and the chart's
// tooltip.
func TestSettlingLevelSaysSo(t *testing.T) {
	d := fixture(t)
	if len(d.Sweep) == 0 {
		t.Fatal("the fixture has no sweep")
	}
	s := &d.Sweep[len(d.Sweep)-1]
	s.Settling, s.SettlingRatio = true, 0.12
	want := "(still settling: the window&#39;s first half held 12 % of its second&#39;s requests)"
	page := render(t, d)
	line := sweepRow(t, d, s.Users)
	if !strings.Contains(line, "still settling: the window's first half held 12 % of its second's requests") {
		t.Errorf("summary.md's row for a settling level: %s", line)
	}
	if n := strings.Count(page, want); n < 2 {
		t.Errorf("report.html says %q %d times, want it in the sweep table and the chart's tooltip", want, n)
	}
	if !strings.Contains(page, ">still settling</span>") {
		t.Error("report.html's sweep table does not mark the settling level")
	}
	if strings.Count(page, ">still settling</span>") != 1 {
		t.Error("report.html marks more than the one settling level")
	}
}

// A sweep level whose run started with a warm prefix cache (the server
// refused the reset) says so in summary.md's row and report.html's table,
// and summary.json carries the reason.
func TestWarmCacheLevelSaysSo(t *testing.T) {
	d := fixture(t)
	if len(d.Sweep) < 2 {
		t.Fatal("the fixture has no sweep")
	}
	s := &d.Sweep[len(d.Sweep)-1]
	s.WarmCache = "the server refused the prefix-cache reset"
	if line := sweepRow(t, d, s.Users); !strings.Contains(line, "warm cache: the server refused the prefix-cache reset") {
		t.Errorf("summary.md's row for a warm level: %s", line)
	}
	page := render(t, d)
	if n := strings.Count(page, ">warm cache</span>"); n != 1 {
		t.Errorf("report.html marks %d levels warm, want the one", n)
	}
	var js bytes.Buffer
	if err := report.JSON(&js, d); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(js.String(), `"warm_cache": "the server refused the prefix-cache reset"`) {
		t.Error("summary.json does not carry the level's warm_cache")
	}
}

// sweepRow is d's summary.md sweep-table row for users.
func sweepRow(t *testing.T, d *plan.Summary, users int) string {
	t.Helper()
	var b strings.Builder
	if err := report.Markdown(&b, d); err != nil {
		t.Fatal(err)
	}
	md := b.String()
	i := strings.Index(md, fmt.Sprintf("| %d | ", users))
	if i < 0 {
		t.Fatalf("summary.md has no sweep row for %d users", users)
	}
	line := md[i:]
	return line[:strings.Index(line, "\n")]
}

// A study that ran trials at once says how many in the report and in
// summary.md; one that ran them one at a time says nothing of it.
func TestParallelTrialsAreSaid(t *testing.T) {
	d := fixture(t)
	if d.Search == nil {
		t.Fatal("the fixture has no search")
	}
	if page := render(t, d); strings.Contains(page, "at once (search.parallel)") {
		t.Error("report.html speaks of parallel trials for a study that ran one at a time")
	}
	d.Search.Parallel = 3
	if page := render(t, d); !strings.Contains(page, "trials, up to 3 at once (search.parallel)") {
		t.Error("report.html does not say the study ran 3 trials at once")
	}
	var md strings.Builder
	if err := report.Markdown(&md, d); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(md.String(), "The study ran up to 3 trials at once (search.parallel).") {
		t.Errorf("summary.md does not say the study ran 3 trials at once:\n%s", md.String())
	}
}
