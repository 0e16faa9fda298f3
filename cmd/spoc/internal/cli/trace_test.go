package cli

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	_ "modernc.org/sqlite"
)

// minimalExport writes the smallest export the reader accepts: two GPUs, an
// attention kernel, a GEMM and one kernel no rule knows.
func minimalExport(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "mini.sqlite")
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	_, err = db.Exec(`
CREATE TABLE META_DATA_EXPORT (name TEXT, value TEXT);
INSERT INTO META_DATA_EXPORT VALUES ('EXPORT_SCHEMA_VERSION', '3.21.4');
CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL);
INSERT INTO StringIds VALUES (1, 'kernel_unified_attention_2d'), (2, 'nvjet_tst_64x8'), (3, 'mystery'), (4, 'step');
CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER NOT NULL,
  demangledName INTEGER, shortName INTEGER);
INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (100, 400, 0, 1, 1), (400, 500, 0, 2, 2), (100, 400, 1, 1, 1), (500, 600, 1, 3, 3);
CREATE TABLE NVTX_EVENTS (start INTEGER NOT NULL, end INTEGER, textId INTEGER);
INSERT INTO NVTX_EVENTS VALUES (300, 450, 4);`)
	if err != nil {
		t.Fatal(err)
	}
	return path
}

func runCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := Run(context.Background(), args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestTraceAnalyzeJSON(t *testing.T) {
	code, out, errOut := runCLI(t, "trace", "analyze", minimalExport(t), "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var b struct {
		Categories []struct {
			Name   string  `json:"name"`
			TimeNS int64   `json:"time_ns"`
			Share  float64 `json:"share"`
		} `json:"categories"`
		GPUs []struct {
			Device       int     `json:"device"`
			IdleFraction float64 `json:"idle_fraction"`
			Categories   []struct {
				Name  string  `json:"name"`
				Share float64 `json:"share"`
			} `json:"categories"`
		} `json:"gpus"`
		UnknownKernels []struct {
			Name string `json:"name"`
		} `json:"unknown_kernels"`
	}
	if err := json.Unmarshal([]byte(out), &b); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	// 300+300 attention, 100 gemm, 100 other = 800; window 100..600.
	if b.Categories[0].Name != "attention" || b.Categories[0].TimeNS != 600 || b.Categories[0].Share != 0.75 {
		t.Errorf("categories %+v", b.Categories)
	}
	if len(b.GPUs) != 2 || b.GPUs[0].IdleFraction != 0.2 || b.GPUs[1].IdleFraction != 0.2 {
		t.Errorf("gpus %+v", b.GPUs)
	}
	if len(b.UnknownKernels) != 1 || b.UnknownKernels[0].Name != "mystery" {
		t.Errorf("unknown %+v", b.UnknownKernels)
	}
}

func TestTraceAnalyzeWindowsAndText(t *testing.T) {
	path := minimalExport(t)
	code, out, errOut := runCLI(t, "trace", "analyze", path, "--nvtx", "step")
	if code != 0 || !strings.Contains(out, `NVTX range "step"`) || !strings.Contains(out, "attention") {
		t.Fatalf("exit %d: %s%s", code, out, errOut)
	}
	code, out, _ = runCLI(t, "trace", "analyze", path, "--window", "450:550", "--json")
	if code != 0 || !strings.Contains(out, `"time_ns": 50`) {
		t.Errorf("window: exit %d\n%s", code, out)
	}
}

func TestTraceAnalyzeCSVAndErrors(t *testing.T) {
	dir := t.TempDir()
	csvPath := filepath.Join(dir, "kern_sum.csv")
	csv := "Processing [x.sqlite] with [cuda_gpu_kern_sum.py]...\n\nTime (%),Total Time (ns),Instances,Avg (ns),Med (ns),Min (ns),Max (ns),StdDev (ns),Name\n" +
		"75.0,300,1,300,300,300,300,0,flash_fwd_kernel\n25.0,100,1,100,100,100,100,0,ncclDevKernel_AllReduce_Sum_bf16_RING_LL\n"
	rules := filepath.Join(dir, "rules.yaml")
	badRules := filepath.Join(dir, "bad.yaml")
	for p, s := range map[string]string{
		csvPath:  csv,
		rules:    "rules:\n  - name: all-attention\n    category: attention\n    match: flash\n",
		badRules: "rules:\n  - name: oops\n    category: attention\n    match: '(('\n",
	} {
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	code, out, errOut := runCLI(t, "trace", "analyze", csvPath, "--rules", rules, "--json")
	if code != 0 || !strings.Contains(out, `"share": 0.75`) || !strings.Contains(out, "ncclDevKernel_AllReduce") {
		t.Errorf("csv: exit %d\n%s%s", code, out, errOut)
	}
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"trace", "analyze", csvPath, "--rules", badRules}, 2, `rule 1 "oops"`},
		{[]string{"trace", "analyze", csvPath, "--window", "1s:2s"}, 2, "no timeline"},
		{[]string{"trace", "analyze", csvPath, "--window", "2s:1s"}, 2, "--window"},
		{[]string{"trace", "analyze", csvPath, "--window", "1:2", "--nvtx", "x"}, 2, "exclude"},
		{[]string{"trace", "analyze", filepath.Join(dir, "missing.sqlite")}, 1, "missing.sqlite"},
		{[]string{"trace", "analyze", rules}, 1, "no header"},
		{[]string{"trace", "analyze"}, 2, "accepts 1 arg"},
		{[]string{"trace", "recipe", "--tp", "0"}, 2, "--tp"},
	} {
		code, _, errOut := runCLI(t, tc.args...)
		if code != tc.code || !strings.Contains(errOut, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit %d mentioning %q", tc.args, code, errOut, tc.code, tc.want)
		}
	}
	code, out, _ = runCLI(t, "trace", "recipe", "--model", "openai/gpt-oss-20b", "--tp", "1")
	if code != 0 || !strings.Contains(out, "vllm serve openai/gpt-oss-20b --tensor-parallel-size 1") {
		t.Errorf("recipe: exit %d\n%s", code, out)
	}
}

func TestTraceAnalyzePredict(t *testing.T) {
	path := minimalExport(t)
	code, out, errOut := runCLI(t, "trace", "analyze", path, "--predict", "--tp", "2", "--decode-seqs", "64")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"roofline comparison", "64 decodes", "W4A16", "FP4*", "measured idle 20.0%", "no FP4 tensor cores"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	code, out, _ = runCLI(t, "trace", "analyze", path, "--predict", "--json")
	var v struct {
		Categories []json.RawMessage `json:"categories"`
		Roofline   []struct {
			Prediction struct {
				Assumption string             `json:"assumption"`
				Split      map[string]float64 `json:"split"`
			} `json:"prediction"`
		} `json:"roofline"`
	}
	if err := json.Unmarshal([]byte(out), &v); err != nil || code != 0 {
		t.Fatalf("exit %d, %v\n%s", code, err, out)
	}
	if len(v.Categories) != 10 || len(v.Roofline) != 2 || v.Roofline[1].Prediction.Assumption != "FP4" || v.Roofline[0].Prediction.Split["moe"] <= 0 {
		t.Errorf("json %+v", v)
	}
	for _, args := range [][]string{
		{"trace", "analyze", path, "--predict", "--gpu", "tpu"},
		{"trace", "analyze", path, "--predict", "--model", "gpt-5"},
		{"trace", "analyze", path, "--predict", "--tp", "3"},
		{"trace", "analyze", path, "--predict", "--decode-seqs", "0", "--prefill-tokens", "0"},
	} {
		if code, _, errOut := runCLI(t, args...); code != 2 {
			t.Errorf("%v: exit %d (%s), want 2", args, code, errOut)
		}
	}
}
