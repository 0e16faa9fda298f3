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

func TestCorpusBuildAndStats(t *testing.T) {
	dir := t.TempDir()
	tree := filepath.Join(dir, "src")
	if err := os.MkdirAll(tree, 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(tree, "main.go"), []byte(strings.Repeat("package main\n\nfunc main() {\n\tprintln(\"hi\")\n}\n", 4)), 0o644)
	out := filepath.Join(dir, "corpus.jsonl")
	var stdout, stderr bytes.Buffer
	if code := Run(context.Background(), []string{"corpus", "build", "--from", "dir", tree, "--out", out, "--default-license", "MIT", "--json"}, &stdout, &stderr); code != 0 {
		t.Fatalf("build: exit %d: %s", code, stderr.String())
	}
	var st struct {
		Docs map[string]int `json:"docs"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &st); err != nil || st.Docs["code"] != 1 {
		t.Fatalf("build stats %s (%v)", stdout.String(), err)
	}
	stdout.Reset()
	if code := Run(context.Background(), []string{"corpus", "stats", out, "--json"}, &stdout, &stderr); code != 0 {
		t.Fatalf("stats: exit %d: %s", code, stderr.String())
	}
	var sum struct {
		Docs     int            `json:"docs"`
		Licenses map[string]int `json:"licenses"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &sum); err != nil || sum.Docs != 1 || sum.Licenses["MIT"] != 1 {
		t.Fatalf("stats %s (%v)", stdout.String(), err)
	}
	for _, args := range [][]string{
		{"corpus", "build", "--from", "hf", tree, "--out", out},
		{"corpus", "build", "--from", "dir", tree},
	} {
		if code := Run(context.Background(), args, &stdout, &stderr); code != ExitUsage {
			t.Errorf("%v: exit %d, want %d", args, code, ExitUsage)
		}
	}
}
