package study

import (
	"strings"
	"testing"
)

// FuzzParseURL: any storage string either fails with an error or yields a
// DSN of the matching driver; parseURL never panics.
func FuzzParseURL(f *testing.F) {
	for _, s := range []string{"sqlite:a.db", "sqlite:///tmp/x.db", "x.db", "postgres://u:p@h:5432/d?sslmode=disable", "mysql://x", "sqlite://%zz", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, dsn, err := parseURL(s)
		if err != nil {
			return
		}
		switch d {
		case sqliteDialect:
			if !strings.HasPrefix(dsn, "file:") || !strings.Contains(dsn, "_txlock=immediate") {
				t.Fatalf("%q → sqlite DSN %q", s, dsn)
			}
		case postgresDialect:
			if dsn != s {
				t.Fatalf("%q → postgres DSN %q", s, dsn)
			}
		}
		_ = redact(s)
	})
}
