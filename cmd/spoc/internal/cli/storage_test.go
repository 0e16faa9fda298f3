package cli

import (
	"os"
	"path/filepath"
	"testing"
)

// TestResolveStorageFlag: a relative SQLite path on the command line means the
// same file in tune and study, relative to the current directory.
func TestResolveStorageFlag(t *testing.T) {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ in, want string }{
		{"sqlite:study.db", "sqlite:" + filepath.Join(wd, "study.db")},
		{"g/study.db", filepath.Join(wd, "g", "study.db")},
		{"sqlite:/abs/study.db", "sqlite:/abs/study.db"},
		{"/abs/study.db", "/abs/study.db"},
		{"sqlite:///abs/study.db", "sqlite:///abs/study.db"},
		{"postgres://u@h/db", "postgres://u@h/db"},
	} {
		got, err := resolveStorageFlag(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("resolveStorageFlag(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
}
