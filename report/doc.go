// Package report renders a capacity plan's plan.Summary as one
// self-contained HTML file, Markdown and JSON (summary.json). Renderers write
// to the io.Writer they are given, never open a file and never run
// anything; Files names a plan's output files and their renderers, which
// the caller writes (the CLI, atomically).
//
// The HTML page loads nothing: no script (hover details are SVG titles),
// no web font, style sheet or image. Charts are inline SVG drawn by the
// small chart helpers LineChart (lines and scatter, nice-tick axes,
// reference lines, shaded bands, clipping) and BarChart (horizontal stacked
// bars). The page sets ContentSecurityPolicy on itself so a browser blocks
// and reports any request. Every string from the plan is escaped, in HTML
// text, attributes, SVG and Markdown. Sections without data say what was not
// collected. docs/report.md describes each section.
package report
