package config

import (
	"fmt"
	"sort"
	"strings"
)

// FieldError is one problem with one field. Path uses dots and [i] indices
// (workload.profiles[1].weight); Line is 0 when the value did not come from a
// file (a default).
type FieldError struct {
	File string
	Line int
	Path string
	Msg  string
}

func (e *FieldError) Error() string {
	var b strings.Builder
	if e.File != "" {
		b.WriteString(e.File)
		if e.Line > 0 {
			fmt.Fprintf(&b, ":%d", e.Line)
		}
		b.WriteString(": ")
	} else if e.Line > 0 {
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

// locate fills File and Line from the positions of the decoded document and
// sorts by line so messages read top to bottom.
func (e *Errors) locate(file string, pos positions) {
	for _, fe := range e.List {
		fe.File = file
		fe.Line = pos.lookup(fe.Path)
	}
	sort.SliceStable(e.List, func(i, j int) bool { return e.List[i].Line < e.List[j].Line })
}

func quoteList(xs []string) string {
	q := make([]string, len(xs))
	for i, x := range xs {
		q[i] = fmt.Sprintf("%q", x)
	}
	return strings.Join(q, ", ")
}
