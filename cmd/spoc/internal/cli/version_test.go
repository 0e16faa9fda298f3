package cli

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestVersionPrintsBuildCommit builds the real binary and checks that both
// spellings print the commit of the checkout it was built from.
func TestVersionPrintsBuildCommit(t *testing.T) {
	t.Parallel() // a build of its own, independent of the other tests
	head, err := exec.Command("git", "rev-parse", "HEAD").Output()
	if err != nil {
		t.Skipf("not in a git checkout (git rev-parse HEAD: %v): the build carries no commit to check", err)
	}
	want := strings.TrimSpace(string(head))[:12]
	bin := stampedBinary(t)
	for _, args := range [][]string{{"--version"}, {"version"}} {
		out, err := exec.Command(bin, args...).CombinedOutput()
		if err != nil {
			t.Fatalf("spoc %v: %v\n%s", args, err, out)
		}
		if !strings.Contains(string(out), "commit "+want) {
			t.Errorf("spoc %v = %q, want it to name commit %s", args, out, want)
		}
	}
	out, err := exec.Command(bin, "version", "--json").Output()
	if err != nil {
		t.Fatalf("spoc version --json: %v", err)
	}
	var info BuildInfo
	if err := json.Unmarshal(out, &info); err != nil {
		t.Fatalf("spoc version --json: %v\n%s", err, out)
	}
	if !strings.HasPrefix(info.Commit, strings.TrimSpace(string(head))) || info.CommitTime == "" || info.GoVersion == "" {
		t.Errorf("spoc version --json = %+v, want commit %s, a commit time and a Go version", info, head)
	}
}

// stampedBinary builds cmd/spoc with VCS stamping forced on (the environment
// may set GOFLAGS=-buildvcs=false). Go stamps only when the repository root
// holds a .git directory, not the .git file of a git worktree: a clean worktree
// is then built from a shared clone of HEAD (the same sources); a worktree with
// uncommitted changes cannot be checked and the test says so.
func stampedBinary(t *testing.T) string {
	t.Helper()
	top, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		t.Skipf("not in a git checkout: %v", err)
	}
	dir := strings.TrimSpace(string(top))
	args := []string{"build", "-buildvcs=true"}
	if fi, err := os.Stat(filepath.Join(dir, ".git")); err != nil || !fi.IsDir() {
		status, err := exec.Command("git", "status", "--porcelain").Output()
		if err != nil || len(status) > 0 {
			t.Skip("git worktree with uncommitted changes: go build stamps no commit in a worktree (.git is a file); commit, or run from a clone")
		}
		clone := filepath.Join(t.TempDir(), "spoc")
		if out, err := exec.Command("git", "clone", "--quiet", "--shared", dir, clone).CombinedOutput(); err != nil {
			t.Fatalf("git clone --shared %s: %v\n%s", dir, err, out)
		}
		dir = clone
		// the clone's folder is new each run, so its packages would be
		// compiled each run; -trimpath makes them independent of the
		// folder, and the build cache serves them from the second run on
		// (the first compiles the standard library and the dependencies
		// without paths too: minutes on a cold cache, in a worktree only)
		args = append(args, "-trimpath")
	}
	bin := filepath.Join(t.TempDir(), "spoc")
	// in a clone, go test's own flags: every package is in the build cache
	// already and only main is compiled and linked
	build := exec.Command("go", append(args, "-o", bin, "./cmd/spoc")...)
	build.Dir = dir
	build.Env = append(os.Environ(), "GOFLAGS=")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build -buildvcs=true ./cmd/spoc in %s: %v\n%s", dir, err, out)
	}
	return bin
}
