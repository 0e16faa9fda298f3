package engine

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// fakeServer is the path of testdata/fakeserver built for this test run.
var fakeServer string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "spoc-engine-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fakeServer = filepath.Join(dir, "fakeserver")
	build := exec.Command("go", "build", "-o", fakeServer, "./testdata/fakeserver")
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build testdata/fakeserver:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}
