package report

import (
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"strings"
	"time"

	"github.com/spoc-project/spoc/plan"
)

// ContentSecurityPolicy is set by the report on itself: nothing may be
// fetched (no script, font, style sheet or image from anywhere), so a
// browser blocks, and reports, any request the page would make.
const ContentSecurityPolicy = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'"

//go:embed report.css
var pageCSS string

//go:embed report.html.tmpl
var pageHTML string

// HTML writes the plan as one self-contained HTML page: no script, style
// sheet, font or image is loaded from anywhere, charts are inline SVG with
// hover details in SVG titles, and every string from the plan is escaped.
func HTML(w io.Writer, d *plan.Summary) error {
	if d == nil {
		return fmt.Errorf("render HTML report: nil data")
	}
	var b strings.Builder
	if err := pageTemplate.Execute(&b, newPage(d)); err != nil {
		return fmt.Errorf("render HTML report: %w", err)
	}
	if _, err := io.WriteString(w, b.String()); err != nil {
		return fmt.Errorf("write HTML report: %w", err)
	}
	return nil
}

var pageTemplate = template.Must(template.New("page").Funcs(template.FuncMap{
	"pct":         fmtPct,
	"ms":          fmtMs,
	"num":         fmtNum,
	"numi":        func(i int) string { return fmtNum(float64(i)) },
	"num64":       func(i int64) string { return fmtNum(float64(i)) },
	"value":       fmtValue,
	"params":      fmtParams,
	"keys":        sortedKeys[any],
	"css":         func() template.CSS { return template.CSS(pageCSS) },
	"csp":         func() string { return ContentSecurityPolicy },
	"f1":          func(v float64) string { return fmt.Sprintf("%.1f", v) },
	"f2":          func(v float64) string { return fmt.Sprintf("%.2f", v) },
	"signed":      func(v float64) string { return fmt.Sprintf("%+.2f", v) },
	"objlabel":    objectiveLabel,
	"objname":     objectiveName,
	"cmdlines":    commandLines,
	"chosenLabel": func(c plan.Capacity) string { return choice(c) },
	"provenance":  plan.Provenance.String,
	"trialsProvenance": func(s *plan.Search) string {
		if s == nil {
			return ""
		}
		for _, m := range s.Trials {
			if m.Provenance != nil {
				return m.Provenance.String()
			}
		}
		return ""
	},
	"anyTie": func(cs []plan.Candidate) bool {
		for _, c := range cs {
			if c.TieBreak != "" {
				return true
			}
		}
		return false
	},
	"trialLabel": func(n int) string {
		if n < 0 {
			return "baseline"
		}
		return fmt.Sprintf("#%d", n)
	},
	"utc": func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04 UTC") },
}).Parse(pageHTML))
