package config

import (
	"fmt"
	"sort"
	"strings"
)

// FieldError is one problem with one field. Path uses dots and [i] indices
// (workload.profiles[1].weight); Line and Column are 1-based and 0 when
// unknown: a value that did not come from a file (a default), or a YAML
// syntax error, which yaml reports by line only.
type FieldError struct {
	File   string
	Line   int
	Column int
	Path   string
	Msg    string
	// Source names the Setting (a command-line flag) that set Path, when
	// the value came from one rather than from the file.
	Source string
}

// Error reads "file:line:column: path: message", the form editors and
// terminals turn into a link to the spot; without a file name, "line L,
// column C: path: message"; for a value a setting gave, "--flag (path):
// message".
func (e *FieldError) Error() string {
	var b strings.Builder
	if e.Source != "" {
		fmt.Fprintf(&b, "%s (%s): %s", e.Source, e.Path, e.Msg)
		return b.String()
	}
	switch {
	case e.File != "" && e.Line > 0 && e.Column > 0:
		fmt.Fprintf(&b, "%s:%d:%d: ", e.File, e.Line, e.Column)
	case e.File != "" && e.Line > 0:
		fmt.Fprintf(&b, "%s:%d: ", e.File, e.Line)
	case e.File != "":
		fmt.Fprintf(&b, "%s: ", e.File)
	case e.Line > 0 && e.Column > 0:
		fmt.Fprintf(&b, "line %d, column %d: ", e.Line, e.Column)
	case e.Line > 0:
		fmt.Fprintf(&b, "line %d: ", e.Line)
	}
	if e.Path != "" {
		b.WriteString(e.Path)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// Errors collects every FieldError of a validation pass, so a user fixes
// them all at once rather than one per run.
type Errors struct{ List []*FieldError }

// Addf records a problem with the field at path.
func (e *Errors) Addf(path, format string, args ...any) {
	e.List = append(e.List, &FieldError{Path: path, Msg: fmt.Sprintf(format, args...)})
}

// Err returns nil when nothing was recorded, else the collection.
func (e *Errors) Err() error {
	if e == nil || len(e.List) == 0 {
		return nil
	}
	return e
}

func (e *Errors) Error() string {
	msgs := make([]string, len(e.List))
	for i, fe := range e.List {
		msgs[i] = fe.Error()
	}
	return strings.Join(msgs, "\n")
}

// locate fills File, Line and Column from the positions of the decoded
// document, keeping any position already known (a value's own, from
// decoding), and sorts so messages read top to bottom, left to right.
func (e *Errors) locate(file string, pos positions) {
	for _, fe := range e.List {
		if fe.Line == 0 && fe.Source == "" {
			at := pos.lookup(fe.Path)
			fe.Line, fe.Column, fe.Source = at.Line, at.Column, at.Source
		}
		if fe.Source == "" {
			fe.File = file
		}
	}
	sort.SliceStable(e.List, func(i, j int) bool {
		a, b := e.List[i], e.List[j]
		return a.Line < b.Line || (a.Line == b.Line && a.Column < b.Column)
	})
}

func quoteList(xs []string) string {
	q := make([]string, len(xs))
	for i, x := range xs {
		q[i] = fmt.Sprintf("%q", x)
	}
	return strings.Join(q, ", ")
}
