package cli

import (
	"bytes"
	"flag"
	"os"
	"strings"
	"testing"
)

var updateDocs = flag.Bool("update-docs", false, "rewrite the headline the README and docs/getting-started.md quote from report/testdata/plan.json")

// The headline the README and docs/getting-started.md quote is the default
// plan's (report/testdata/plan.json, written by a real plan with
// go test ./report -run 'TestFixture$' -fixture), printed as spoc plan
// prints it: a change that moves the answer fails here until the docs
// move too. go test ./cmd/spoc/internal/cli -run TestDocsQuoteTheDefaultPlan
// -update-docs rewrites the quoted blocks (between the spoc:headline
// markers).
func TestDocsQuoteTheDefaultPlan(t *testing.T) {
	var out bytes.Buffer
	writePlanResult(&out, fixtureSummary(t), "spoc-out")
	headline := "```\n" + out.String() + "```\n"
	for _, doc := range []string{"../../../../README.md", "../../../../docs/getting-started.md"} {
		b, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		const open, closing = "<!-- spoc:headline: go test ./cmd/spoc/internal/cli -run TestDocsQuoteTheDefaultPlan -update-docs -->\n", "<!-- /spoc:headline -->"
		text := string(b)
		i, j := strings.Index(text, open), strings.Index(text, closing)
		if i < 0 || j < i {
			t.Errorf("%s has no quoted headline between %q and %q", doc, strings.TrimSpace(open), closing)
			continue
		}
		got := text[i+len(open) : j]
		if got == headline {
			continue
		}
		if !*updateDocs {
			t.Errorf("%s quotes a headline the default plan no longer prints; run go test ./cmd/spoc/internal/cli -run TestDocsQuoteTheDefaultPlan -update-docs\nquoted:\n%s\nprinted:\n%s", doc, got, headline)
			continue
		}
		if err := os.WriteFile(doc, []byte(text[:i+len(open)]+headline+text[j:]), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
