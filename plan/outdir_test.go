package plan

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSwapRecords(t *testing.T) {
	write := func(t *testing.T, path, s string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	leftovers := func(t *testing.T, dir string) {
		t.Helper()
		m, _ := filepath.Glob(filepath.Join(dir, ".records-old-*"))
		if len(m) != 0 {
			t.Errorf("the previous records' folder is left aside: %v", m)
		}
	}
	t.Run("replace", func(t *testing.T) {
		dir := t.TempDir()
		staging, final := filepath.Join(dir, stagingRecords), filepath.Join(dir, RecordsDir)
		write(t, filepath.Join(final, "old.jsonl"), "old")
		write(t, filepath.Join(staging, "new.jsonl"), "new")
		if err := swapRecords(staging, final); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(filepath.Join(final, "old.jsonl")); err == nil {
			t.Error("old records kept")
		}
		if b, err := os.ReadFile(filepath.Join(final, "new.jsonl")); err != nil || string(b) != "new" {
			t.Errorf("new records: %q, %v", b, err)
		}
		leftovers(t, dir)
	})
	t.Run("no new records", func(t *testing.T) {
		dir := t.TempDir()
		final := filepath.Join(dir, RecordsDir)
		write(t, filepath.Join(final, "old.jsonl"), "old")
		if err := swapRecords(filepath.Join(dir, stagingRecords), final); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(final); err == nil {
			t.Error("old records kept beside a plan that wrote none")
		}
		leftovers(t, dir)
	})
	t.Run("failed rename keeps the old records", func(t *testing.T) {
		dir := t.TempDir()
		final := filepath.Join(dir, RecordsDir)
		write(t, filepath.Join(final, "old.jsonl"), "old")
		// a staging path that cannot be renamed: a folder's child
		// into its own subtree is EINVAL
		staging := filepath.Join(dir, stagingRecords)
		write(t, filepath.Join(staging, "x"), "x")
		if err := swapRecords(staging, filepath.Join(staging, "x", RecordsDir)); err == nil {
			t.Fatal("swap into a path under a file succeeded")
		}
		if b, err := os.ReadFile(filepath.Join(final, "old.jsonl")); err != nil || string(b) != "old" {
			t.Errorf("old records after a failed swap: %q, %v", b, err)
		}
	})
}

func TestCheckRecordsOwned(t *testing.T) {
	dir := t.TempDir()
	if err := checkRecordsOwned(dir); err != nil {
		t.Errorf("a folder without records/: %v", err)
	}
	if err := os.Mkdir(filepath.Join(dir, RecordsDir), 0o755); err != nil {
		t.Fatal(err)
	}
	err := checkRecordsOwned(dir)
	if err == nil || !strings.Contains(err.Error(), "summary.json") {
		t.Errorf("records/ without a plan summary: %v, want an error naming summary.json", err)
	}
	for _, tc := range []struct {
		body string
		ok   bool
	}{
		{`{"title": "x"}`, false}, {`not json`, false}, {`{"spoc_version": "", "engine": {}}`, true},
	} {
		if err := os.WriteFile(filepath.Join(dir, SummaryFile), []byte(tc.body), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := checkRecordsOwned(dir); (err == nil) != tc.ok {
			t.Errorf("summary.json %s: %v, want ok=%v", tc.body, err, tc.ok)
		}
	}
}
