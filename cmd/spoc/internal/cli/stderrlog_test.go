package cli

import (
	"errors"
	"strings"
	"testing"
)

// A warning reads like spoc's other stderr lines; below warnings nothing
// prints.
func TestStderrLoggerWritesSpocLines(t *testing.T) {
	var b strings.Builder
	l := stderrLogger(&b)
	l.Info("not shown")
	l.Warn("the server cannot reset its prefix cache", "err", errors.New("HTTP 404"))
	l.With("endpoint", "http://127.0.0.1:8000").WithGroup("run").Error("failed", "users", 4)
	want := "spoc: warning: the server cannot reset its prefix cache (err: HTTP 404)\n" +
		"spoc: error: failed (endpoint: http://127.0.0.1:8000, run.users: 4)\n"
	if b.String() != want {
		t.Errorf("logged\n%s\nwant\n%s", b.String(), want)
	}
}
