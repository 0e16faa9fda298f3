package config

import "testing"

func TestSearchStorageIn(t *testing.T) {
	for _, tc := range []struct{ storage, out, want string }{
		{"sqlite:study.db", "spoc-out", "sqlite:spoc-out/study.db"},
		{"study.db", "spoc-out", "spoc-out/study.db"},
		{"sqlite:sub/study.db", "/tmp/p", "sqlite:/tmp/p/sub/study.db"},
		{"sqlite:/abs/study.db", "spoc-out", "sqlite:/abs/study.db"},
		{"/abs/study.db", "spoc-out", "/abs/study.db"},
		{"sqlite:///abs/study.db", "spoc-out", "sqlite:///abs/study.db"},
		{"postgres://u@db/spoc?sslmode=disable", "spoc-out", "postgres://u@db/spoc?sslmode=disable"},
		{"postgresql://u@h/db?x=y", "out", "postgresql://u@h/db?x=y"},
		{"sqlite:study.db", "", "sqlite:study.db"},
		{"", "spoc-out", ""},
	} {
		if got := (Search{Storage: tc.storage}).StorageIn(tc.out); got != tc.want {
			t.Errorf("Storage %q in %q = %q, want %q", tc.storage, tc.out, got, tc.want)
		}
	}
}
