package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// binDir holds the spoc binary the end-to-end tests run (built once per
// test binary, removed by TestMain).
var (
	binDir   string
	binOnce  sync.Once
	binPath  string
	binError error
	binOut   []byte
)

func TestMain(m *testing.M) {
	if dir := os.Getenv(strictServerEnv); dir != "" {
		// this test binary, started by spoc's process launcher, is a
		// server that refuses every flag it does not declare
		os.Exit(strictServer(dir))
	}
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// spocBinary builds cmd/spoc once and returns its path: the end-to-end
// tests run the real CLI in separate processes, as a user does.
func spocBinary(t testing.TB) string {
	t.Helper()
	binOnce.Do(func() {
		binDir, binError = os.MkdirTemp("", "spoc-cli-test-")
		if binError != nil {
			return
		}
		binPath = filepath.Join(binDir, "spoc")
		// the flags go test built the test binary with (no -trimpath):
		// every package is then in the build cache already and only main
		// is compiled and linked; with -trimpath a cold cache compiled the
		// module and all its dependencies a second time (minutes on 2 cores)
		binOut, binError = exec.Command("go", "build", "-o", binPath, "../..").CombinedOutput()
	})
	if binError != nil {
		t.Fatalf("go build ../.. (cmd/spoc): %v\n%s", binError, binOut)
	}
	return binPath
}
