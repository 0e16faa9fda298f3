package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestConfigCheck(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.yaml")
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(good, []byte("run:\n  users: 8\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bad, []byte("workload:\n  seed: abc\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		args     []string
		code     int
		contains string
	}{
		{"flag", []string{"config", "check", "-c", good}, ExitOK, good + ": ok"},
		{"positional", []string{"config", "check", good}, ExitOK, good + ": ok"},
		{"same file twice", []string{"config", "check", "-c", good, good}, ExitOK, good + ": ok"},
		{"invalid", []string{"config", "check", bad}, ExitUsage, "bad.yaml:2:9: workload.seed:"},
		{"missing", []string{"config", "check", filepath.Join(dir, "none.yaml")}, ExitUsage, "none.yaml"},
		{"no file", []string{"config", "check"}, ExitUsage, "needs -c FILE"},
		{"two files", []string{"config", "check", "-c", good, bad}, ExitUsage, "two files"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, tc.args...)
			if code != tc.code || !strings.Contains(stdout+stderr, tc.contains) {
				t.Errorf("exit %d, stdout %q, stderr %q; want exit %d mentioning %q", code, stdout, stderr, tc.code, tc.contains)
			}
		})
	}
	code, stdout, _ := runCLI(t, "config", "check", bad, "--json")
	var v struct {
		Valid bool   `json:"valid"`
		Error string `json:"error"`
	}
	if code != ExitUsage || json.Unmarshal([]byte(stdout), &v) != nil || v.Valid || !strings.Contains(v.Error, "workload.seed") {
		t.Errorf("--json: exit %d, %q", code, stdout)
	}
}
