// Package testtool holds the project's rules for tests. A test that needs
// an installed program (Prometheus, Chromium, PostgreSQL, sqlite3) is
// skipped where it is missing, except under CI=true, where it fails and
// says how to install it (Missing, Find). A test of the long lane (Long)
// runs only when SPOC_TEST_LANE=long; the plain `go test ./...` is the
// fast lane and says, for each long test it skipped, why and how to run
// it (CONTRIBUTING.md).
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

// MissingErr stops t like Missing, for an error that already names what is
// missing and how to get it ("etcd not found on PATH: install it with …").
func MissingErr(t testing.TB, err error) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatal(err)
	}
	t.Skip(err)
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

// LaneEnv is the environment variable that selects the long lane: with
// SPOC_TEST_LANE=long the tests marked Long run (bash .ci/run's long lane
// sets it, with a -timeout of its own); without it they are skipped.
const LaneEnv = "SPOC_TEST_LANE"

// LaneLong is LaneEnv's value that runs the long lane.
const LaneLong = "long"

// Long marks t as a test of the long lane: one that runs in real time for
// minutes (a live plan, a Kubernetes control plane) or fits and sweeps for
// a minute of CPU or more. Outside the long lane it skips t, saying why it
// is long and how to run it. The lane is an environment variable rather
// than a build tag so that long tests are compiled, vetted and linted in
// every lane, share helpers with fast ones without a tagged split, and show
// up in the fast lane's -v output as SKIP with their reason.
func Long(t testing.TB, why string) {
	t.Helper()
	if os.Getenv(LaneEnv) == LaneLong {
		return
	}
	t.Skipf("long lane (%s): run it with %s=%s go test -run '^%s$' in its package; bash .ci/run runs the long lane",
		why, LaneEnv, LaneLong, strings.SplitN(t.Name(), "/", 2)[0])
}
