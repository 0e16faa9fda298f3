package report

import (
	"fmt"
	"io"
	"slices"

	"github.com/spoc-project/spoc/plan"
)

// File is one file of a plan's output folder: the name report.formats gives
// it, its file name and the renderer that writes it.
type File struct {
	Format string
	Name   string
	Render func(io.Writer, *plan.Summary) error
}

// files are a plan's output files, in the order they are written.
var files = []File{
	{"json", "summary.json", JSON},
	{"html", "report.html", HTML},
	{"md", "summary.md", Markdown},
}

// Files are the output files of a plan for formats: summary.json (format
// "json"), report.html ("html") and summary.md ("md"), the ones formats
// names, or all three when it is empty; an unknown format is an error. The
// caller writes them (spoc plan and spoc report: every file rendered before
// any is written, each replacing its predecessor atomically); report opens
// no file.
func Files(formats []string) ([]File, error) {
	for _, f := range formats {
		if !slices.ContainsFunc(files, func(o File) bool { return o.Format == f }) {
			return nil, fmt.Errorf("report: unknown format %q (one of \"json\", \"html\", \"md\")", f)
		}
	}
	var out []File
	for _, o := range files {
		if len(formats) == 0 || slices.Contains(formats, o.Format) {
			out = append(out, o)
		}
	}
	return out, nil
}
