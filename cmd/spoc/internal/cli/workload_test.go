package cli

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spoc-project/spoc/corpus"
	"github.com/spoc-project/spoc/tokenizer"
)

// TestWorkloadInspectAcceptance checks issue 2's acceptance on the defaults:
// shares 0.70/0.20/0.10 ±0.03, P0 start p50 within 10 % of 5,000, P0 max at
// most 50,000, P2 max at most 131,072 minus its output budget.
func TestWorkloadInspectAcceptance(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := Run(context.Background(), []string{"workload", "inspect", "--json", "--sessions", "2000"}, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	var in struct {
		Profiles []struct {
			Name            string  `json:"name"`
			Share           float64 `json:"share"`
			ContextStartP50 int     `json:"context_start_p50"`
			ContextMax      int     `json:"context_max"`
			TurnsP50        int     `json:"turns_p50"`
		} `json:"profiles"`
		Prefix struct {
			IdealHitRate *float64 `json:"ideal_hit_rate"`
		} `json:"prefix"`
	}
	if err := json.Unmarshal(out.Bytes(), &in); err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{"P0": 0.70, "P1": 0.20, "P2": 0.10}
	if len(in.Profiles) != 3 {
		t.Fatalf("%d profiles", len(in.Profiles))
	}
	for _, p := range in.Profiles {
		if math.Abs(p.Share-want[p.Name]) > 0.03 {
			t.Errorf("%s share %.3f, want %.2f ± 0.03", p.Name, p.Share, want[p.Name])
		}
		if p.TurnsP50 < 1 {
			t.Errorf("%s turns p50 %d", p.Name, p.TurnsP50)
		}
		switch p.Name {
		case "P0":
			if math.Abs(float64(p.ContextStartP50)-5000) > 500 {
				t.Errorf("P0 context start p50 %d, want 5000 ± 10 %%", p.ContextStartP50)
			}
			if p.ContextMax > 50000 {
				t.Errorf("P0 context max %d above 50000", p.ContextMax)
			}
		case "P2":
			if p.ContextMax > 131072-4096 {
				t.Errorf("P2 context max %d above 131072 minus the output budget", p.ContextMax)
			}
		}
	}
	if h := in.Prefix.IdealHitRate; h == nil || *h <= 0 || *h >= 1 {
		t.Errorf("prefix.ideal_hit_rate = %v", h)
	}
}

func TestWorkloadExportDeterministic(t *testing.T) {
	dir := t.TempDir()
	hash := func(name string) [32]byte {
		path := filepath.Join(dir, name)
		var out, errOut bytes.Buffer
		if code := Run(context.Background(), []string{"workload", "export", "--sessions", "50", "--out", path}, &out, &errOut); code != 0 {
			t.Fatalf("exit %d: %s", code, errOut.String())
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if n := strings.Count(string(b), "\n"); n != 50 {
			t.Fatalf("%d lines, want 50", n)
		}
		return sha256.Sum256(b)
	}
	if hash("a.jsonl") != hash("b.jsonl") {
		t.Fatal("two exports of the same configuration differ")
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 2 {
		t.Fatalf("temporary files left behind: %v", entries)
	}
}

func TestWorkloadUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"workload", "export"},
		{"workload", "inspect", "--sessions", "0"},
		{"workload", "inspect", "-c", "/nonexistent/spoc.yaml"},
	} {
		var out, errOut bytes.Buffer
		if code := Run(context.Background(), args, &out, &errOut); code != ExitUsage {
			t.Errorf("%v: exit %d, want %d (%s)", args, code, ExitUsage, errOut.String())
		}
	}
}

// TestWorkloadFitThenInspect fits a profile to a generated trajectory
// fixture and uses the written fragment as a configuration.
func TestWorkloadFitThenInspect(t *testing.T) {
	tok, err := tokenizer.New(tokenizer.O200kBase)
	if err != nil {
		t.Fatal(err)
	}
	trajs, err := corpus.Synthesize(3, 20, corpus.DefaultSyntheticSpec, tok)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	var pq bytes.Buffer
	if err := corpus.WriteParquet(&pq, corpus.DatasetCoderForge, trajs); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, "trajectories")
	os.MkdirAll(data, 0o755)
	if err := os.WriteFile(filepath.Join(data, "part-0.parquet"), pq.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	profiles := filepath.Join(dir, "profiles.yaml")
	var out, errOut bytes.Buffer
	if code := Run(context.Background(), []string{"workload", "fit", "--from", "coderforge", data, "--out", profiles, "--name", "agent", "--json"}, &out, &errOut); code != 0 {
		t.Fatalf("fit: exit %d: %s", code, errOut.String())
	}
	var res struct {
		Fit struct {
			Trajectories int `json:"trajectories"`
		} `json:"fit"`
	}
	if err := json.Unmarshal(out.Bytes(), &res); err != nil || res.Fit.Trajectories != 20 {
		t.Fatalf("fit output %s (%v)", out.String(), err)
	}
	out.Reset()
	if code := Run(context.Background(), []string{"workload", "inspect", "-c", profiles, "--sessions", "50", "--json"}, &out, &errOut); code != 0 {
		t.Fatalf("inspect -c fitted: exit %d: %s", code, errOut.String())
	}
	if !strings.Contains(out.String(), `"name": "agent"`) {
		t.Fatalf("fitted profile not used: %s", out.String())
	}
}
