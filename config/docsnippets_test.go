package config

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// topLevelKey is a line that starts a plan file's section.
var topLevelKey = regexp.MustCompile(`^(engine|workload|sla|search|run|sweep|telemetry|trace|report|plan):`)

// TestDocSnippetsAreValidConfigs loads every ```yaml block of the README
// and docs/*.md that is a plan file (its first key is one of the plan's
// sections, at column 1) the way spoc loads a file, so a documented
// snippet with a misspelt or removed key fails here rather than for the
// user who copies it. Indented fragments (the lines to add inside a
// section) and other YAML (Kubernetes manifests, trace rules) are skipped.
func TestDocSnippetsAreValidConfigs(t *testing.T) {
	files, err := filepath.Glob("../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, "../README.md")
	fence := regexp.MustCompile("(?s)```yaml\n(.*?)```")
	checked := 0
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range fence.FindAllSubmatchIndex(raw, -1) {
			block := string(raw[m[2]:m[3]])
			if !isPlanFile(block) {
				continue
			}
			line := 1 + strings.Count(string(raw[:m[2]]), "\n")
			// padded so that errors give the line in the Markdown file
			padded := strings.Repeat("\n", line-1) + block
			if _, err := Load(strings.NewReader(padded), f); err != nil && !onlyMissingFiles(err) {
				t.Errorf("the yaml block at %s:%d is not a valid plan file:\n%v", f, line, err)
			}
			checked++
		}
	}
	t.Logf("%d yaml blocks loaded as plan files", checked)
	if checked < 5 {
		t.Errorf("checked %d yaml blocks; the docs hold more plan snippets than that", checked)
	}
}

// isPlanFile reports whether the first key of a YAML block is a plan
// section at column 1.
func isPlanFile(block string) bool {
	for _, l := range strings.Split(block, "\n") {
		if strings.TrimSpace(l) == "" || strings.HasPrefix(strings.TrimSpace(l), "#") {
			continue
		}
		return topLevelKey.MatchString(l)
	}
	return false
}

// onlyMissingFiles reports whether every error of a load names a file the
// snippet refers to that does not exist here (the user's own manifest, say):
// the snippet's keys and values are valid, its files are the reader's.
func onlyMissingFiles(err error) bool {
	var errs *Errors
	if !errors.As(err, &errs) || len(errs.List) == 0 {
		return false
	}
	for _, e := range errs.List {
		if !strings.Contains(e.Msg, "no such file or directory") {
			return false
		}
	}
	return true
}
