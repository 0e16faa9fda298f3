package report

import (
	"html/template"
	"io"
)

// HTML writes the plan as one self-contained HTML page: no script, style
// sheet, font or image is loaded from anywhere.
func HTML(w io.Writer, d *Data) error {
	return pageTemplate.Execute(w, d)
}

var pageTemplate = template.Must(template.New("page").Funcs(template.FuncMap{
	"pct": func(f float64) float64 { return 100 * f },
}).Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}}</title>
<style>
body{font:15px/1.5 system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;color:#1b1f24}
table{border-collapse:collapse;margin:1rem 0}td,th{border:1px solid #ccd;padding:.25rem .5rem;text-align:right}
th:first-child,td:first-child{text-align:left}.fail{color:#b00020}.verdict{font-size:1.4rem}
code,pre{background:#f4f5f7;padding:.1rem .3rem}pre{padding:.6rem;overflow-x:auto;white-space:pre-wrap}
</style></head><body>
<h1>{{.Title}}</h1>
<section id="verdict"><h2>Verdict</h2>
<p class="verdict"><strong>{{.Capacity.Users}} concurrent users</strong> on {{.Engine.GPUs}}× {{.Engine.GPU}} serving {{.Engine.Model}} (TP {{.Engine.TensorParallelSize}}{{if eq .Engine.Kind "sim"}}, simulated{{end}}).</p>
{{if .Capacity.FirstFailingUsers}}<p>At {{.Capacity.FirstFailingUsers}} users the SLA fails first on <span class="fail">{{.Capacity.FailedClause}}</span>.</p>{{end}}
<pre>{{.Capacity.ServeCommand}}</pre>
</section>
{{if .Sweep}}<section id="sweep"><h2>Sweep</h2><table>
<tr><th>users</th><th>verdict</th><th>output tok/s</th><th>TTFT p95 ms</th><th>ITL p95 ms</th><th>KV usage %</th><th>prefix hits %</th></tr>
{{range .Sweep}}<tr><td>{{.Users}}</td><td>{{if .Pass}}pass{{else}}<span class="fail">{{.FailedClause}}</span>{{end}}</td><td>{{printf "%.0f" .OutputThroughput}}</td><td>{{printf "%.0f" .TTFTP95Ms}}</td><td>{{printf "%.1f" .ITLP95Ms}}</td><td>{{printf "%.1f" (pct .KVCacheUsageMean)}}</td><td>{{printf "%.1f" (pct .PrefixCacheHitRate)}}</td></tr>
{{end}}</table></section>{{end}}
<section id="assumptions"><h2>Assumptions</h2><table><tr><th>field</th><th>value</th><th>note</th></tr>
{{range .Assumptions}}<tr><td><code>{{.Field}}</code></td><td>{{.Value}}</td><td>{{.Note}}</td></tr>{{end}}
</table></section>
{{range .Notes}}<p>{{.}}</p>{{end}}
</body></html>
`))
