package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/spoc-project/spoc/internal/testharness/testtool"
)

// A live plan on a server spoc did not start keeps its flags: the
// capacity sweep's first walk is the baseline's (same flags, windows,
// workload seed, a cold cache per run), so it is measured once — the
// sweep runs only its refinement, and the baseline's records are the
// sweep levels' records.
func TestLivePlanOnAnExternalServerMeasuresOnce(t *testing.T) {
	testtool.Long(t, "a live plan in real time against a spoc sim serve process: about 1 min")
	spoc := spocBinary(t)
	yaml := livePlanYAML("external", "H200-SXM", nil)
	name := regexp.MustCompile(`served_model_name: (\S+)`).FindStringSubmatch(yaml)
	if name == nil {
		t.Fatalf("the live plan config names no served model:\n%s", yaml)
	}
	url := startSimServer(t, spoc, "--served-model-name", name[1])
	dir := t.TempDir()
	cfg := filepath.Join(dir, "external.yaml")
	writeFile(t, cfg, strings.Replace(yaml, "process:", "external:\n    url: "+url+"\n  process:", 1))
	out := filepath.Join(dir, "out")
	code, stdout, errOut := runSpoc(t, spoc, "plan", "-c", cfg, "--out", out)
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, errOut)
	}
	s := readSummary(t, out)
	c := s.Capacity
	notes := strings.Join(s.Notes, "\n")
	if !strings.Contains(notes, "Measured once: the capacity sweep took the baseline's") {
		t.Errorf("no note says the baseline's levels were reused: %q", s.Notes)
	}
	// the server runs without VLLM_SERVER_DEV_MODE, so it refuses the
	// cache reset: the note counts the reused runs that started warm
	// instead of calling them all cold
	warm := 0
	for _, p := range s.Sweep {
		if p.WarmCache != "" {
			warm++
		}
	}
	if m := regexp.MustCompile(`(\d+) of the \d+ runs on the prefix cache an earlier run left`).FindStringSubmatch(notes); warm == 0 || m == nil || m[1] != fmt.Sprint(warm) || strings.Contains(notes, "each run on a cold prefix cache") {
		t.Errorf("%d sweep levels started on a warm cache; the measured-once note must count them: %q", warm, s.Notes)
	}
	if c.Refinement == nil || c.Runs != c.Refinement.Runs {
		t.Errorf("the sweep ran %d runs with a refinement of %+v: want only the refinement's, the walk taken from the baseline", c.Runs, c.Refinement)
	}
	for _, p := range s.Sweep {
		f := filepath.Join(out, "records", "users-"+pad5(p.Users)+".jsonl.gz")
		if _, err := os.Stat(f); err != nil {
			t.Errorf("sweep level %d has no records: %v", p.Users, err)
		}
	}
	if leftover, _ := filepath.Glob(filepath.Join(out, "records", "baseline-users-*")); len(leftover) > 0 {
		t.Errorf("baseline records left beside the sweep's though every level was reused: %v", leftover)
	}
}

func pad5(n int) string { return fmt.Sprintf("%05d", n) }
