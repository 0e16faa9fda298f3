package config

import (
	"bufio"
	"bytes"
	"flag"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite golden files (docs/configuration.md)")

func TestDefaultIsValid(t *testing.T) {
	if err := Default().Validate(); err != nil {
		t.Fatalf("default config does not validate:\n%v", err)
	}
}

// The printed default must load back to exactly the defaults: the file users
// start from is the schema, not an approximation of it.
func TestDefaultYAMLRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteYAML(&buf, Default()); err != nil {
		t.Fatal(err)
	}
	first := buf.String()
	got, err := Load(&buf, "default.yaml")
	if err != nil {
		t.Fatalf("printed default does not load: %v", err)
	}
	var again bytes.Buffer
	if err := WriteYAML(&again, got); err != nil {
		t.Fatal(err)
	}
	if again.String() != first {
		t.Errorf("round trip changed the config:\n%s", again.String())
	}
	if got.Engine.Model != "gpt-oss-120b" || len(got.Workload.Profiles) != 3 || got.SLA.TTFT.Max != Default().SLA.TTFT.Max {
		t.Errorf("round trip lost values: %+v", got)
	}
}

func TestDefaultYAMLCommentsEveryField(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteYAML(&buf, Default()); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{
		"# ASSUMPTION: output budgets were not published",
		"# ASSUMPTION: think times were not published",
		"# ASSUMPTION: SLA thresholds were not published",
		"# Context limit in tokens",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("default YAML lacks %q", want)
		}
	}
	// Every key line of the first block of each mapping is preceded by a comment.
	lines := strings.Split(out, "\n")
	for i, l := range lines {
		trim := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(l), "- "))
		if trim == "" || strings.HasPrefix(trim, "#") || !strings.Contains(trim, ":") {
			continue
		}
		prev := strings.TrimSpace(lines[i-1])
		if strings.HasPrefix(strings.TrimSpace(l), "- ") && !strings.HasSuffix(prev, ":") {
			continue // later list items are documented by the first one
		}
		if strings.HasPrefix(prev, "#") || strings.HasPrefix(strings.TrimSpace(l), "- #") || strings.HasSuffix(prev, "- #") {
			continue
		}
		// keys inside maps (engine.params) and later list items are exempt
		if isMapEntry(lines, i) {
			continue
		}
		t.Errorf("line %d has no comment above it: %q", i+1, l)
	}
}

// isMapEntry reports whether line i is an entry of a map-typed field or of a
// list element after the first (those are documented once).
func isMapEntry(lines []string, i int) bool {
	indent := len(lines[i]) - len(strings.TrimLeft(lines[i], " "))
	for j := i - 1; j >= 0; j-- {
		l := lines[j]
		ind := len(l) - len(strings.TrimLeft(l, " "))
		if strings.TrimSpace(l) == "" || strings.HasPrefix(strings.TrimSpace(l), "#") {
			continue
		}
		if ind < indent {
			key := strings.TrimSpace(l)
			return key == "params:" || strings.HasPrefix(key, "- ") || strings.HasPrefix(key, "context_start:") ||
				strings.HasPrefix(key, "growth:") || strings.HasPrefix(key, "output_tokens:") || strings.HasPrefix(key, "think_time_s:") || strings.HasPrefix(key, "queries:")
		}
	}
	return false
}

// One testdata/invalid-*.yaml file per validation rule; its first line holds
// the exact expected message after "# want: ".
func TestInvalidConfigs(t *testing.T) {
	files, err := filepath.Glob("testdata/invalid-*.yaml")
	if err != nil || len(files) < 20 {
		t.Fatalf("want at least 20 invalid-*.yaml cases, found %d (%v)", len(files), err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			first, _, _ := strings.Cut(string(data), "\n")
			want, ok := strings.CutPrefix(first, "# want: ")
			if !ok {
				t.Fatalf("first line must be '# want: <message>'")
			}
			_, err = Load(bytes.NewReader(data), filepath.Base(f))
			if err == nil {
				t.Fatalf("loaded without error; want %q", want)
			}
			if got := err.Error(); got != want {
				t.Errorf("error mismatch\n got: %s\nwant: %s", got, want)
			}
		})
	}
}

func TestAllErrorsReported(t *testing.T) {
	in := "engine:\n  gpus: 0\nrun:\n  users: 0\n  think_time_scale: -1\n"
	_, err := Load(strings.NewReader(in), "multi.yaml")
	if err == nil {
		t.Fatal("want errors")
	}
	got := err.Error()
	for _, want := range []string{
		"multi.yaml:2:3: engine.gpus: must be at least 1, got 0",
		"multi.yaml:4:3: run.users: must be at least 1, got 0",
		"multi.yaml:5:3: run.think_time_scale: must not be negative, got -1",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q in\n%s", want, got)
		}
	}
}

// Type errors name their field, and every one of them is reported.
func TestTypeErrorsNameTheirFields(t *testing.T) {
	in := "engine:\n  gpus: four\nrun:\n  users: [1, 2]\n"
	_, err := Load(strings.NewReader(in), "types.yaml")
	if err == nil {
		t.Fatal("want errors")
	}
	got := err.Error()
	for _, want := range []string{"types.yaml:2:9: engine.gpus: cannot unmarshal", "types.yaml:4:10: run.users: cannot unmarshal"} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q in\n%s", want, got)
		}
	}
}

func TestPartialOverlayKeepsDefaults(t *testing.T) {
	cfg, err := Load(strings.NewReader("engine:\n  gpu: H200-SXM\n  gpus: 2\n  tensor_parallel_size: 2\nsla:\n  itl:\n    max: 50ms\n"), "h200.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Engine.GPU != "H200-SXM" || cfg.Engine.GPUs != 2 || cfg.Engine.Model != "gpt-oss-120b" {
		t.Errorf("engine overlay wrong: %+v", cfg.Engine)
	}
	if cfg.SLA.ITL.Max.D().Milliseconds() != 50 || cfg.SLA.ITL.Percentile != 95 || cfg.SLA.TTFT.Max.D().Seconds() != 2 {
		t.Errorf("sla overlay wrong: %+v", cfg.SLA)
	}
	if len(cfg.Workload.Profiles) != 3 {
		t.Errorf("profiles lost: %d", len(cfg.Workload.Profiles))
	}
}

func TestEmptyFileIsDefault(t *testing.T) {
	cfg, err := Load(strings.NewReader("# nothing\n"), "empty.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(cfg, Default()) {
		t.Error("empty file should give the defaults")
	}
}

func TestEffectiveMaxContext(t *testing.T) {
	w := DefaultWorkload()
	p2 := w.Profiles[2]
	if got, want := p2.EffectiveMaxContext(131072), 131072-4096; got != want {
		t.Errorf("P2 effective max = %d, want %d (context limit minus output budget)", got, want)
	}
	if got := w.Profiles[0].EffectiveMaxContext(131072); got != 50000 {
		t.Errorf("P0 effective max = %d, want 50000", got)
	}
}

// docs/configuration.md is generated from the schema; this keeps it current.
func TestReferenceUpToDate(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteReference(&buf); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("..", "docs", "configuration.md")
	if *update {
		if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	have, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run: go test ./config -run TestReferenceUpToDate -update)", err)
	}
	if !bytes.Equal(have, buf.Bytes()) {
		t.Errorf("docs/configuration.md is stale; run: go test ./config -run TestReferenceUpToDate -update")
	}
	// every schema field appears in the reference
	sc := bufio.NewScanner(bytes.NewReader(buf.Bytes()))
	rows := 0
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "| `") {
			rows++
		}
	}
	if rows < 80 {
		t.Errorf("reference has only %d field rows", rows)
	}
}

func FuzzLoad(f *testing.F) {
	var buf bytes.Buffer
	_ = WriteYAML(&buf, Default())
	f.Add(buf.Bytes())
	files, _ := filepath.Glob("testdata/invalid-*.yaml")
	for _, p := range files {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := Load(bytes.NewReader(data), "fuzz.yaml")
		if err == nil {
			if cfg == nil {
				t.Fatal("nil config without error")
			}
			if verr := cfg.Validate(); verr != nil {
				t.Fatalf("Load accepted a config that does not validate: %v", verr)
			}
		} else if err.Error() == "" {
			t.Fatal("empty error message")
		}
	})
}

func TestAssumptionsListed(t *testing.T) {
	as := Assumptions(Default())
	want := map[string]string{
		"sla.ttft":                           "p95 ≤ 2s",
		"sla.itl":                            "p95 ≤ 100ms",
		"workload.profiles[0].output_tokens": "lognormal(median=400, sigma=0.6) in [16, 4096]",
		"workload.profiles[2].think_time_s":  "lognormal(median=45, sigma=0.7) in [5, 600]",
		"search.users":                       "0",
	}
	got := map[string]string{}
	for _, a := range as {
		got[a.Path] = a.Value
		if a.Note == "" {
			t.Errorf("%s has no note", a.Path)
		}
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("assumption %s = %q, want %q", k, got[k], v)
		}
	}
}

// engine.params replaces the default flags: {} is the engine's own
// defaults, a partial map keeps only what it names.
func TestEngineParamsReplaceDefaults(t *testing.T) {
	for _, tc := range []struct {
		yaml string
		want map[string]any
	}{
		{"engine:\n  params: {}\n", map[string]any{}},
		{"engine:\n  params: {max-num-seqs: 64}\n", map[string]any{"max-num-seqs": 64}},
	} {
		c, err := Load(strings.NewReader(tc.yaml), "t.yaml")
		if err != nil {
			t.Fatal(err)
		}
		if len(c.Engine.Params) != len(tc.want) || (len(tc.want) > 0 && c.Engine.Params["max-num-seqs"] != 64) {
			t.Errorf("%q: params %v, want %v", tc.yaml, c.Engine.Params, tc.want)
		}
	}
	c, err := Load(strings.NewReader("engine:\n  gpus: 4\n"), "t.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Engine.Params) == 0 {
		t.Error("a file without engine.params lost the default flags")
	}
}

// The Assumptions table lists only what spoc assumed: a field the file set,
// a clause it set part of, or a profile it wrote is the user's, not an
// assumption.
func TestAssumptionsLeaveOutWhatTheFileSet(t *testing.T) {
	cfg, err := Load(strings.NewReader(`
sla:
  ttft: {percentile: 99, max: 3s}
  itl:
    max: 50ms
search:
  users: 120
`), "spoc.yaml")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, a := range Assumptions(cfg) {
		got[a.Path] = true
	}
	for _, set := range []string{"sla.ttft", "sla.itl", "search.users"} {
		if got[set] {
			t.Errorf("%s was set by the file but is listed as an assumption", set)
		}
	}
	for _, assumed := range []string{"sla.max_error_rate", "workload.profiles[0].output_tokens", "workload.geometry.root_tokens"} {
		if !got[assumed] {
			t.Errorf("%s was not set but is not listed; got %v", assumed, got)
		}
	}
	// a profile list the file wrote is the user's as a whole
	cfg, err = Load(strings.NewReader(`
workload:
  profiles:
    - name: only
      weight: 1
      context_start: {kind: constant, value: 4000}
      max_context: 32000
      growth: {kind: constant, value: 200}
      output_tokens: {kind: constant, value: 300}
      think_time_s: {kind: constant, value: 10}
      at_max: new-session
`), "spoc.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range Assumptions(cfg) {
		if strings.HasPrefix(a.Path, "workload.profiles") {
			t.Errorf("%s listed as an assumption; the file wrote the profiles", a.Path)
		}
	}
}

// TestSweepPrecisionForms reads sweep.precision as a percentage or a
// number, and the Setup carries it with the run bounds to the sweep.
func TestSweepPrecisionForms(t *testing.T) {
	for in, want := range map[string]float64{"5%": 0.05, "12.5 %": 0.125, "0.2": 0.2, "0": 0} {
		cfg, err := Load(strings.NewReader("sweep:\n  precision: "+in+"\n  min_runs: 4\n  max_runs: 12\n"), "p.yaml")
		if err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		if got := float64(cfg.Sweep.Precision); math.Abs(got-want) > 1e-12 {
			t.Errorf("precision %q read as %v, want %v", in, got, want)
		}
		s, err := cfg.Setup(SetupOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if p := s.Sweep.Precision; math.Abs(p.Target-want) > 1e-12 || p.MinRuns != 4 || p.MaxRuns != 12 {
			t.Errorf("precision %q: the Setup's sweep precision is %+v", in, p)
		}
	}
}
