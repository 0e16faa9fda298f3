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

// parentHelperEnv turns the test binary into a stand-in for spoc that
// starts a server (the path in the variable) and waits to be killed.
const parentHelperEnv = "SPOC_ENGINE_TEST_PARENT"

func TestMain(m *testing.M) {
	if server := os.Getenv(parentHelperEnv); server != "" {
		cmd := exec.Command(server, "--fake-sleep")
		setProcessGroup(cmd)
		if err := cmd.Start(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		fmt.Println(cmd.Process.Pid)
		select {} // until SIGKILLed by the test
	}
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
