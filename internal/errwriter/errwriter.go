// Package errwriter wraps an io.Writer so that a long run of formatted
// writes checks for an error once, at the end.
package errwriter

import (
	"fmt"
	"io"
)

// Writer forwards writes to W until one fails; later writes do nothing and
// Err holds the first error.
type Writer struct {
	W   io.Writer
	Err error
}

// New returns a Writer on w.
func New(w io.Writer) *Writer { return &Writer{W: w} }

// Write writes p unless an earlier write failed.
func (e *Writer) Write(p []byte) (int, error) {
	if e.Err != nil {
		return 0, e.Err
	}
	n, err := e.W.Write(p)
	e.Err = err
	return n, err
}

// Printf formats to the writer; check Err when done.
func (e *Writer) Printf(format string, args ...any) { fmt.Fprintf(e, format, args...) }
