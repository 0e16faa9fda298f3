package atomicfile

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCommitPublishesAndAbortLeavesNothing(t *testing.T) {
	dir := t.TempDir()
	dest := filepath.Join(dir, "out.json")
	if err := Write(dest, func(w io.Writer) error { _, err := io.WriteString(w, "{}\n"); return err }); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(dest)
	if err != nil || st.Mode().Perm() != 0o644 {
		t.Fatalf("stat %v, mode %v", err, st)
	}
	// a failing writer leaves the previous file and no temporary behind
	err = Write(dest, func(w io.Writer) error { io.WriteString(w, "half"); return errors.New("boom") })
	if err == nil {
		t.Fatal("want the writer's error")
	}
	if b, _ := os.ReadFile(dest); string(b) != "{}\n" {
		t.Errorf("destination changed to %q", b)
	}
	f, err := Create(filepath.Join(dir, "never.json"))
	if err != nil {
		t.Fatal(err)
	}
	f.Abort()
	f.Abort() // idempotent
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("left behind: %v", entries)
	}
	if err := f.Commit(); err == nil {
		t.Error("commit after abort must fail")
	}
}

func TestCreateRefusesWhatIsNotARegularFile(t *testing.T) {
	dir := t.TempDir()
	for _, dest := range []string{os.DevNull, dir} {
		before, err := os.Lstat(dest)
		if err != nil {
			t.Fatal(err)
		}
		if f, err := Create(dest); err == nil {
			f.Abort()
			t.Fatalf("Create(%s) accepted a destination that is not a regular file", dest)
		} else if !strings.Contains(err.Error(), "not a regular file") {
			t.Errorf("Create(%s): %v", dest, err)
		}
		after, err := os.Lstat(dest)
		if err != nil || after.Mode() != before.Mode() {
			t.Errorf("%s changed: %v → %v (%v)", dest, before.Mode(), after.Mode(), err)
		}
	}
}
