package testtool

import (
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
