package report

import (
	"bytes"
	"fmt"
	"io"
	"path/filepath"
	"slices"

	"github.com/spoc-project/spoc/internal/atomicfile"
	"github.com/spoc-project/spoc/plan"
)

// output is one file of a plan's output folder.
type output struct {
	format, name string
	render       func(io.Writer, *plan.Summary) error
}

// outputs are a plan's output files in the order WriteFiles writes them;
// format is the name report.formats uses.
var outputs = []output{
	{"json", "summary.json", JSON},
	{"html", "report.html", HTML},
	{"md", "summary.md", Markdown},
}

// WriteFiles writes a plan's output files for s into dir, which must exist:
// summary.json (format "json"), report.html ("html") and summary.md ("md"),
// the ones formats names, or all three when it is empty. Every file is rendered
// before any is written, and each replaces its predecessor through a
// temporary file renamed into place: a failed render leaves the previous
// files untouched, and a reader never sees half a file.
func WriteFiles(dir string, s *plan.Summary, formats []string) error {
	for _, f := range formats {
		if !slices.ContainsFunc(outputs, func(o output) bool { return o.format == f }) {
			return fmt.Errorf("report: unknown format %q (one of \"json\", \"html\", \"md\")", f)
		}
	}
	type file struct {
		path string
		data []byte
	}
	var files []file
	for _, o := range outputs {
		if len(formats) > 0 && !slices.Contains(formats, o.format) {
			continue
		}
		var buf bytes.Buffer
		if err := o.render(&buf, s); err != nil {
			return err
		}
		files = append(files, file{filepath.Join(dir, o.name), buf.Bytes()})
	}
	for _, f := range files {
		err := atomicfile.Write(f.path, func(w io.Writer) error {
			_, err := w.Write(f.data)
			return err
		})
		if err != nil {
			return err
		}
	}
	return nil
}
