package plan_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spoc-project/spoc/config"
	"github.com/spoc-project/spoc/plan"
)

// TestPlanLeavesForeignRecords points a plan at a folder whose records/
// is not a plan's: the plan refuses before it runs anything, and the
// folder keeps its files.
func TestPlanLeavesForeignRecords(t *testing.T) {
	dir := t.TempDir()
	mine := filepath.Join(dir, "records", "mine.jsonl")
	if err := os.MkdirAll(filepath.Dir(mine), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(mine, []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := plan.Run(context.Background(), quickSetup(t, config.Default(), dir), plan.Options{})
	if err == nil || !strings.Contains(err.Error(), "summary.json") {
		t.Errorf("plan into a folder with foreign records/: %v, want a refusal naming summary.json", err)
	}
	if _, serr := os.Stat(mine); serr != nil {
		t.Errorf("the folder's own records are gone: %v", serr)
	}
}
