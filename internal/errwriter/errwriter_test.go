package errwriter

import (
	"errors"
	"strings"
	"testing"
)

type failAfter struct {
	n   int
	buf strings.Builder
}

func (f *failAfter) Write(p []byte) (int, error) {
	if f.n == 0 {
		return 0, errors.New("disk full")
	}
	f.n--
	return f.buf.Write(p)
}

func TestFirstErrorSticks(t *testing.T) {
	f := &failAfter{n: 1}
	w := New(f)
	w.Printf("a%d", 1)
	w.Printf("b")
	w.Printf("c")
	if f.buf.String() != "a1" || w.Err == nil || w.Err.Error() != "disk full" {
		t.Fatalf("wrote %q, err %v; want a1 and the first error kept", f.buf.String(), w.Err)
	}
}
