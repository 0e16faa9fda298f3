// Package report renders a capacity plan (Data, written by spoc plan as
// summary.json) as one self-contained HTML file, Markdown and JSON. Renderers
// write to the io.Writer they are given and never run anything: no request
// leaves the HTML (no CDN, web font or remote script; charts are inline SVG).
package report
