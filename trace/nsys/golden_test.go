package nsys

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// TestGoldenBreakdown pins the whole JSON breakdown of the gpt-oss fixture,
// so that any change to categorisation, shares or output shape shows in review.
func TestGoldenBreakdown(t *testing.T) {
	p, err := ReadSQLite(context.Background(), gptOSSFixture(t), Options{})
	if err != nil {
		t.Fatal(err)
	}
	p.Source = "gpt-oss-120b-tp4.sqlite"
	b := analyze(t, p)
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(b); err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "gpt-oss-120b-tp4.breakdown.json")
	if *update {
		if err := os.WriteFile(golden, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(buf.Bytes(), want) {
		t.Errorf("breakdown differs from %s (go test -update rewrites it):\n%s", golden, buf.String())
	}
}
