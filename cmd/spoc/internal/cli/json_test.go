package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// runJSON runs spoc in process and decodes stdout as exactly one JSON document.
func runJSON(t *testing.T, args ...string) (code int, doc any, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = Run(context.Background(), args, &out, &errOut)
	dec := json.NewDecoder(&out)
	if err := dec.Decode(&doc); err != nil {
		t.Fatalf("spoc %s: exit %d, stdout is not JSON: %v\nstdout: %s\nstderr: %s", strings.Join(args, " "), code, err, out.String(), errOut.String())
	}
	if dec.More() {
		t.Fatalf("spoc %s: stdout holds more than one JSON document:\n%s", strings.Join(args, " "), out.String())
	}
	return code, doc, errOut.String()
}

// TestJSONErrors runs every verb that takes --json into a failure: stdout is
// one object {"error", "code"} whose code is the process exit code.
func TestJSONErrors(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing.yaml")
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("no_such_section: 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args     []string
		wantCode int
	}{
		{[]string{"bench", "client", "--json", "--levels", "x"}, ExitUsage},
		{[]string{"config", "default", "--json", "--bogus"}, ExitUsage},
		{[]string{"config", "check", "--json", bad}, ExitUsage},
		{[]string{"corpus", "build", "--json", "--from", "nowhere", missing}, ExitUsage},
		{[]string{"corpus", "stats", "--json", missing}, ExitFailure},
		{[]string{"plan", "--json", "-c", missing}, ExitUsage},
		{[]string{"run", "--json", "--users", "x"}, ExitUsage},
		{[]string{"search", "bench", "--json", "--bogus"}, ExitUsage},
		{[]string{"sim", "run", "--json", "-c", bad}, ExitUsage},
		{[]string{"sim", "calibrate", "--json", missing}, ExitUsage},
		{[]string{"sim", "validate", "--json", missing}, ExitUsage},
		{[]string{"study", "ls", "--json", "--bogus"}, ExitUsage},
		{[]string{"study", "show", "--json"}, ExitUsage},
		{[]string{"summarize", "--json", missing}, ExitFailure},
		{[]string{"sweep", "--json", "-c", missing}, ExitUsage},
		{[]string{"telemetry", "scrape", "--json", "--duration", "x"}, ExitUsage},
		{[]string{"telemetry", "query", "--json", "--start", "x"}, ExitUsage},
		{[]string{"telemetry", "catalog", "--json", "extra"}, ExitUsage},
		{[]string{"trace", "analyze", "--json", missing}, ExitFailure},
		{[]string{"tune", "--json", "-c", missing}, ExitUsage},
		{[]string{"version", "--json", "extra"}, ExitUsage},
		{[]string{"workload", "inspect", "--json", "--sessions", "x"}, ExitUsage},
		{[]string{"workload", "fit", "--json", "--from", "nowhere", missing}, ExitUsage},
		{[]string{"--json", "nosuchverb"}, ExitUsage},
		{[]string{"sim", "run", "--users", "x", "--json"}, ExitUsage}, // --json after the bad value
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			code, v, _ := runJSON(t, tc.args...)
			doc, _ := v.(map[string]any)
			msg, _ := doc["error"].(string)
			got, _ := doc["code"].(float64)
			if msg == "" || int(got) != code {
				t.Errorf("stdout %v: want an error message and code %d (the exit code)", doc, code)
			}
			if code != tc.wantCode {
				t.Errorf("exit code %d, want %d (%s)", code, tc.wantCode, msg)
			}
		})
	}
}

// TestJSONResults checks that fast successful --json invocations print one
// parseable document and exit 0.
func TestJSONResults(t *testing.T) {
	dir := t.TempDir()
	records := filepath.Join(dir, "r.jsonl")
	cfg := filepath.Join(dir, "spoc.yaml")
	var yaml, errOut bytes.Buffer
	if code := Run(context.Background(), []string{"config", "default"}, &yaml, &errOut); code != 0 {
		t.Fatalf("config default: exit %d: %s", code, errOut.String())
	}
	if err := os.WriteFile(cfg, yaml.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"version", "--json"},
		{"config", "default", "--json"},
		{"config", "check", "--json", cfg},
		{"telemetry", "catalog", "--json"},
		{"workload", "inspect", "--json", "--sessions", "5"},
		{"sim", "run", "--json", "--users", "2", "--duration", "20s", "--warmup", "0s", "-o", records},
		{"summarize", "--json", records},
	} {
		code, _, stderr := runJSON(t, args...)
		if code != ExitOK {
			t.Errorf("spoc %s: exit %d: %s", strings.Join(args, " "), code, stderr)
		}
	}
}
