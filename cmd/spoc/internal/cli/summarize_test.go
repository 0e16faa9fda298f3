package cli

import (
	"compress/gzip"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// A plan keeps its sweep's records gzip-compressed (users-NNNNN.jsonl.gz);
// spoc summarize reads them as it reads a plain records file, to the same
// summary.
func TestSummarizeReadsCompressedRecords(t *testing.T) {
	dir := t.TempDir()
	plain := filepath.Join(dir, "r.jsonl")
	if code, _, stderr := runCLI(t, "sim", "run", "--users", "2", "--duration", "20s", "--warmup", "0s", "-o", plain); code != ExitOK {
		t.Fatalf("sim run: exit %d: %s", code, stderr)
	}
	gz := filepath.Join(dir, "users-00002.jsonl.gz")
	in, err := os.Open(plain)
	if err != nil {
		t.Fatal(err)
	}
	out, err := os.Create(gz)
	if err != nil {
		t.Fatal(err)
	}
	zw := gzip.NewWriter(out)
	if _, err := io.Copy(zw, in); err != nil {
		t.Fatal(err)
	}
	in.Close()
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	out.Close()
	var results [2]struct {
		Overall struct {
			Requests int64 `json:"requests"`
		} `json:"overall"`
	}
	for i, f := range []string{plain, gz} {
		code, stdout, stderr := runCLI(t, "summarize", "--json", f)
		if code != ExitOK {
			t.Fatalf("summarize %s: exit %d: %s", f, code, stderr)
		}
		if err := json.Unmarshal([]byte(stdout), &results[i]); err != nil {
			t.Fatalf("summarize %s: %v\n%s", f, err, stdout)
		}
	}
	if results[0].Overall.Requests == 0 || results[0] != results[1] {
		t.Errorf("plain %+v, compressed %+v: want the same non-empty summary", results[0], results[1])
	}
}
