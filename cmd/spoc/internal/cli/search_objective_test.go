package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
)

// spoc search objective describes the study, then answers each parameter
// set as spoc tune would record it: a run of the real simulator, or FAIL
// without a run for flags the space's rules refuse.
func TestSearchObjectiveServesTheStudy(t *testing.T) {
	var out, errb bytes.Buffer
	root := NewRoot(&out, &errb)
	params := `"max-num-seqs":64,"gpu-memory-utilization":0.9,"enable-prefix-caching":true,"long-prefill-token-threshold":0,"block-size":16,"async-scheduling":false`
	root.SetIn(strings.NewReader(`{"params":{"max-num-batched-tokens":2048,` + params + "}}\n" +
		`{"params":{"max-num-batched-tokens":256,"max-num-seqs":512,"gpu-memory-utilization":0.9,"enable-prefix-caching":true,"long-prefill-token-threshold":0,"block-size":16,"async-scheduling":false}}` + "\n"))
	root.SetArgs([]string{"search", "objective", "--users", "20"})
	if err := root.ExecuteContext(context.Background()); err != nil {
		t.Fatalf("%v\n%s", err, errb.String())
	}
	sc := bufio.NewScanner(&out)
	var lines []string
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if len(lines) != 3 {
		t.Fatalf("%d lines, want a header and two replies:\n%s", len(lines), out.String())
	}
	var header struct {
		Users      int      `json:"users"`
		Directions []string `json:"directions"`
		Space      struct {
			Params []struct{ Name string } `json:"params"`
			Rules  []string                `json:"rules"`
		} `json:"space"`
		Dropped []struct{ Name string } `json:"dropped"`
	}
	if err := json.Unmarshal([]byte(lines[0]), &header); err != nil {
		t.Fatal(err)
	}
	if header.Users != 20 || len(header.Directions) != 3 || len(header.Space.Params) != 7 || len(header.Dropped) != 1 || header.Dropped[0].Name != "enable-chunked-prefill" {
		t.Errorf("header %s", lines[0])
	}
	var ok, refused struct {
		State       string    `json:"state"`
		Values      []float64 `json:"values"`
		Constraints []float64 `json:"constraints"`
		Error       string    `json:"error"`
	}
	if err := json.Unmarshal([]byte(lines[1]), &ok); err != nil || ok.State != "COMPLETE" || len(ok.Values) != 3 || ok.Values[0] <= 0 || len(ok.Constraints) == 0 {
		t.Errorf("first reply %s (%v)", lines[1], err)
	}
	if err := json.Unmarshal([]byte(lines[2]), &refused); err != nil || refused.State != "FAIL" || !strings.Contains(refused.Error, "max-num-batched-tokens >= max-num-seqs") {
		t.Errorf("second reply %s (%v), want FAIL naming the rule", lines[2], err)
	}
}
