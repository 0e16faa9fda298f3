package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spoc-project/spoc/loadgen/testserver"
)

// A failed plan removes the empty folders it created, out itself when it
// created it and left nothing there, keeps the files it wrote (a server's
// log its error quotes) and never touches what was there before, empty
// folders included.
func TestFailedPlanRemovesOnlyTheEmptyFoldersItCreated(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	srv := testserver.Start(testserver.Config{})
	nothing := srv.URL // nothing listens there once closed
	srv.Close()
	plan := func(t *testing.T, cfg, out string) (int, string) {
		t.Helper()
		var stdout, stderr bytes.Buffer
		code := Run(context.Background(), []string{"plan", "-c", cfg, "--out", out}, &stdout, &stderr)
		if code != ExitFailure || strings.Contains(stdout.String(), "capacity") {
			t.Fatalf("exit %d, want %d with no capacity\nstdout:\n%s\nstderr:\n%s", code, ExitFailure, stdout.String(), stderr.String())
		}
		return code, stderr.String()
	}

	// an external server that is not there: the plan writes nothing
	external := filepath.Join(dir, "external.yaml")
	writeFile(t, external, strings.Replace(livePlanYAML("external", "B200", nil), "process:", "external:\n    url: "+nothing+"\n  process:", 1))
	out := filepath.Join(dir, "first")
	if _, stderr := plan(t, external, out); !strings.Contains(stderr, "the empty folder "+out+" this plan created was removed") {
		t.Errorf("stderr does not say the empty folder was removed:\n%s", stderr)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("the failed first plan left %s behind: %v", out, err)
	}

	// a server that never starts: its logs are kept, the empty folders go
	process := filepath.Join(dir, "process.yaml")
	writeFile(t, process, livePlanYAML("process", "B200", []string{"/bin/false", "{{.Port}}"}))
	out = filepath.Join(dir, "logs")
	if _, stderr := plan(t, process, out); !strings.Contains(stderr, out+" keeps only what this plan logged there") {
		t.Errorf("stderr does not say what was kept:\n%s", stderr)
	}
	logs, _ := filepath.Glob(filepath.Join(out, "servers", "server-*", "server.log"))
	if len(logs) == 0 {
		t.Errorf("the server's log the error quotes was removed")
	}
	checkNoEmptyFolder(t, out)

	// an output folder that existed, with an empty folder of the user's
	out = filepath.Join(dir, "existing")
	mine := filepath.Join(out, "mine")
	if err := os.MkdirAll(mine, 0o755); err != nil {
		t.Fatal(err)
	}
	plan(t, external, out)
	if _, err := os.Stat(mine); err != nil {
		t.Errorf("the failed plan removed a folder that was there before: %v", err)
	}
}

// checkNoEmptyFolder fails on an empty folder under root.
func checkNoEmptyFolder(t *testing.T, root string) {
	t.Helper()
	filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			if entries, _ := os.ReadDir(path); len(entries) == 0 {
				t.Errorf("empty folder left behind: %s", path)
			}
		}
		return nil
	})
}

func writeFile(t *testing.T, path, body string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}
