package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/spoc-project/spoc/plan"
)

// Files names a plan's output files in order, keeps only those formats
// names, refuses a format it does not know, and each renders to a writer.
func TestFiles(t *testing.T) {
	all, err := Files(nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range all {
		names = append(names, f.Format+":"+f.Name)
		var b bytes.Buffer
		if err := f.Render(&b, &plan.Summary{Title: "t"}); err != nil || b.Len() == 0 {
			t.Errorf("%s: rendered %d bytes, %v", f.Name, b.Len(), err)
		}
	}
	if got := strings.Join(names, " "); got != "json:summary.json html:report.html md:summary.md" {
		t.Errorf("Files(nil) = %s", got)
	}
	some, err := Files([]string{"md", "json"})
	if err != nil || len(some) != 2 || some[0].Name != "summary.json" || some[1].Name != "summary.md" {
		t.Errorf("Files(md, json) = %v, %v", some, err)
	}
	if _, err := Files([]string{"pdf"}); err == nil || !strings.Contains(err.Error(), `unknown format "pdf"`) {
		t.Errorf("Files(pdf): %v", err)
	}
}
