// Package testtool holds the project's rule for integration tests that need
// an installed program (Prometheus, Chromium, PostgreSQL, sqlite3): where it
// is missing the test is skipped, except under CI=true, where it fails and
// says how to install it.
package testtool

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// Missing stops t because what is not installed; install is the command
// that installs it.
func Missing(t testing.TB, what, install string) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s not found: install it with %s", what, install)
	}
	t.Skipf("%s not found (%s)", what, install)
}

// Find returns the path of the first of names on PATH, or stops t with
// Missing.
func Find(t testing.TB, install string, names ...string) string {
	t.Helper()
	for _, n := range names {
		if p, err := exec.LookPath(n); err == nil {
			return p
		}
	}
	Missing(t, strings.Join(names, " or "), install)
	return ""
}
