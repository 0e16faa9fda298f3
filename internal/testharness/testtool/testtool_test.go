package testtool

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestFindReturnsTheFirstOnPath(t *testing.T) {
	dir := t.TempDir()
	exe := filepath.Join(dir, "spoc-testtool-b")
	if err := os.WriteFile(exe, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir)
	if got := Find(t, "apt-get install -y nothing", "spoc-testtool-a", "spoc-testtool-b"); got != exe {
		t.Fatalf("Find = %q, want %q", got, exe)
	}
}

// TestMissingFailsUnderCI runs a test that needs an absent program with
// CI=true and checks that it fails (not skips) and names the install command.
func TestMissingFailsUnderCI(t *testing.T) {
	if os.Getenv("SPOC_TESTTOOL_CHILD") == "1" {
		Find(t, "apt-get install -y spoc-nothing", "spoc-no-such-program")
		return
	}
	for ci, want := range map[string]string{"true": "--- FAIL", "": "--- SKIP"} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestMissingFailsUnderCI$", "-test.v")
		cmd.Env = append(os.Environ(), "SPOC_TESTTOOL_CHILD=1", "CI="+ci)
		b, err := cmd.CombinedOutput()
		out := string(b)
		if !strings.Contains(out, want) || !strings.Contains(out, "apt-get install -y spoc-nothing") {
			t.Errorf("CI=%q: want %q and the install command; err %v, output:\n%s", ci, want, err, out)
		}
	}
}

// TestLongRunsOnlyInTheLongLane runs a test marked Long without the lane
// (skipped, saying why and how to run it) and with it (run).
func TestLongRunsOnlyInTheLongLane(t *testing.T) {
	if os.Getenv("SPOC_TESTTOOL_CHILD") == "1" {
		Long(t, "a child test that takes no time")
		t.Log("the long test ran")
		return
	}
	for lane, want := range map[string][]string{
		"":       {"--- SKIP", "long lane (a child test that takes no time)", "SPOC_TEST_LANE=long go test -run '^TestLongRunsOnlyInTheLongLane$'"},
		"fast":   {"--- SKIP", "long lane"},
		LaneLong: {"--- PASS", "the long test ran"},
	} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestLongRunsOnlyInTheLongLane$", "-test.v")
		cmd.Env = append(os.Environ(), "SPOC_TESTTOOL_CHILD=1", LaneEnv+"="+lane)
		b, err := cmd.CombinedOutput()
		out := string(b)
		for _, w := range want {
			if !strings.Contains(out, w) {
				t.Errorf("%s=%q: want %q; err %v, output:\n%s", LaneEnv, lane, w, err, out)
			}
		}
		if lane != LaneLong && strings.Contains(out, "the long test ran") {
			t.Errorf("%s=%q: the long test ran outside its lane:\n%s", LaneEnv, lane, out)
		}
	}
}

// TestMissingErrFailsUnderCI: the same rule for an error that names what
// is missing and how to get it, printed once as it is.
func TestMissingErrFailsUnderCI(t *testing.T) {
	const msg = "spoc-nothing not found on PATH: install it with apt-get install -y spoc-nothing"
	if os.Getenv("SPOC_TESTTOOL_CHILD") == "1" {
		MissingErr(t, errors.New(msg))
		return
	}
	for ci, want := range map[string]string{"true": "--- FAIL", "": "--- SKIP"} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestMissingErrFailsUnderCI$", "-test.v")
		cmd.Env = append(os.Environ(), "SPOC_TESTTOOL_CHILD=1", "CI="+ci)
		b, err := cmd.CombinedOutput()
		out := string(b)
		if !strings.Contains(out, want) || strings.Count(out, msg) != 1 {
			t.Errorf("CI=%q: want %q and the message once; err %v, output:\n%s", ci, want, err, out)
		}
	}
}
