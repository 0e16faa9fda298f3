//go:build unix

package cli

import (
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/spoc-project/spoc/loadgen/testserver"
)

// A failed run removes only a records file it created: a path that was
// there before (an empty file the user made, a pipe, /dev/null) stays.
func TestRunFailureKeepsWhatExistedBefore(t *testing.T) {
	srv := testserver.Start(testserver.Config{})
	target := srv.URL
	srv.Close()
	dir := t.TempDir()
	existing := filepath.Join(dir, "existing.jsonl")
	if err := os.WriteFile(existing, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "pipe")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	// a reader, so that opening the pipe for writing does not block
	go func() {
		if r, err := os.Open(fifo); err == nil {
			io.Copy(io.Discard, r)
			r.Close()
		}
	}()
	for _, out := range []string{existing, fifo} {
		code, _, stderr := runLoadCLI(t, "run", "--target", target, "--users", "1", "--duration", "1s", "-o", out)
		if code != ExitFailure {
			t.Fatalf("-o %s: exit %d, stderr %q; want %d", out, code, stderr, ExitFailure)
		}
		if _, err := os.Stat(out); err != nil {
			t.Errorf("-o %s: the failed run removed a path that existed before it: %v", out, err)
		}
	}
	if fi, err := os.Lstat(fifo); err != nil || fi.Mode().Type() != os.ModeNamedPipe {
		t.Errorf("the pipe is no longer a pipe: %v %v", fi, err)
	}
}
