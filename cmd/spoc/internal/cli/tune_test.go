package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/spoc-project/spoc/config"
	"github.com/spoc-project/spoc/result"
	"github.com/spoc-project/spoc/tune"
)

func tuneCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := Run(context.Background(), append([]string{"tune"}, args...), &out, &errb)
	return code, out.String(), errb.String()
}

func writeTuneConfig(t *testing.T, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "spoc.yaml")
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// smallStudy keeps each simulated trial to a fraction of a second.
const smallStudy = `
search:
  trials: 3
  population: 2
  users: 8
  duration: 30s
  warmup: 5s
run:
  ramp: 0s
`

func TestTuneRunsAndResumes(t *testing.T) {
	cfg := writeTuneConfig(t, smallStudy)
	out := filepath.Join(t.TempDir(), "out")
	code, stdout, stderr := tuneCLI(t, "-c", cfg, "--out", out)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	// progress on stderr, one line per trial; the result on stdout
	for _, want := range []string{"== tune", "1/3 ETA ", " #0 ", "3/3 ETA 0:00 #2 "} {
		if !strings.Contains(stderr, want) {
			t.Errorf("progress lacks %q:\n%s", want, stderr)
		}
	}
	for _, want := range []string{`study "default": 3 trials`, "this run: 3 trials"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, stdout)
		}
	}
	if strings.Contains(stdout, "ETA") {
		t.Errorf("progress on stdout:\n%s", stdout)
	}
	if _, err := os.Stat(filepath.Join(out, "study.db")); err != nil {
		t.Errorf("study database not in the output folder: %v", err)
	}
	if _, err := os.Stat(filepath.Join(out, "trials")); err == nil {
		t.Errorf("simulated trials kept artefacts without --keep-artifacts")
	}
	code, stdout, stderr = tuneCLI(t, "-c", cfg, "--out", out, "--trials", "4", "--json", "--keep-artifacts")
	if code != 0 {
		t.Fatalf("resume: exit %d: %s", code, stderr)
	}
	var res tune.Result
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		t.Fatalf("--json output: %v\n%s", err, stdout)
	}
	if res.Run.Ran != 1 || len(res.Trials) != 4 || !strings.Contains(stderr, "4/4 ETA 0:00 #3 ") {
		t.Errorf("resume ran %d, study has %d trials; stderr:\n%s", res.Run.Ran, len(res.Trials), stderr)
	}
	if _, err := os.Stat(filepath.Join(out, "trials", "default", "trial-00003", "records.jsonl")); err != nil {
		t.Errorf("--keep-artifacts: %v", err)
	}
}

func TestTuneDryRun(t *testing.T) {
	for _, tc := range []struct {
		name   string
		config string
		args   []string
		want   []string
		// wantErr is on stderr: the study's decisions, as a real run says them
		wantErr []string
	}{
		// sampler auto: TPE's 10 start trials, engine.params first
		{"sim", "", nil, []string{"first 10 trials (of 60)", "# trial 0\nsimulated openai/gpt-oss-120b", "--max-num-batched-tokens 8192 --max-num-seqs 256", "# trial 9\n"},
			// the notes a real run prints before its first trial
			[]string{"search.space: enable-chunked-prefill dropped, every trial runs with true: ", "\ntrial 0 is engine.params: max-num-batched-tokens=8192 max-num-seqs=256"}},
		{"process", `
engine:
  kind: process
  process:
    command: [spoc, sim, serve, --port, "{{.Port}}", --model, "{{.Model}}"]
`, nil, []string{"# trial 0\nspoc sim serve --port \"<port>\" --model gpt-oss-120b --", "--max-model-len 131072", "--tensor-parallel-size 4"}, []string{"trial 0 is engine.params: "}},
		{"kubernetes", "", []string{"--engine", "kubernetes", "--study", "Big Study"}, []string{"kind: Deployment", "name: spoc-big-study-s1", "nvidia.com/gpu: \"4\"", "kind: Service"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"--dry-run", "--out", filepath.Join(t.TempDir(), "out")}, tc.args...)
			if tc.config != "" {
				args = append(args, "-c", writeTuneConfig(t, tc.config))
			}
			code, stdout, stderr := tuneCLI(t, args...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(stdout, w) {
					t.Errorf("dry run lacks %q:\n%s", w, stdout)
				}
			}
			for _, w := range tc.wantErr {
				if !strings.Contains(stderr, w) {
					t.Errorf("dry run's stderr lacks %q:\n%s", w, stderr)
				}
			}
			if _, err := os.Stat(filepath.Join(args[2])); err == nil {
				t.Error("dry run created the output folder")
			}
		})
	}
	code, stdout, _ := tuneCLI(t, "--dry-run", "--json", "--trials", "5")
	var launches []tune.Launch
	if code != 0 || json.Unmarshal([]byte(stdout), &launches) != nil || len(launches) != 5 {
		t.Errorf("--dry-run --json: exit %d, %d launches:\n%s", code, len(launches), stdout)
	}
}

func TestTuneUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"--engine", "docker"},
		{"--engine", "external"},
		{"--trials", "0"},
		{"-c", "/no/such/spoc.yaml"},
	} {
		if code, _, stderr := tuneCLI(t, append(args, "--dry-run")...); code != ExitUsage {
			t.Errorf("tune %v: exit %d, want %d (%s)", args, code, ExitUsage, stderr)
		}
	}
}

func TestTuneMissingCommandIsUsageError(t *testing.T) {
	cfg := writeTuneConfig(t, "engine:\n  kind: process\n  process:\n    command: [spoc-no-such-vllm, serve]\n")
	code, _, stderr := tuneCLI(t, "-c", cfg, "--out", filepath.Join(t.TempDir(), "out"))
	if code != ExitUsage || !strings.Contains(stderr, "spoc-no-such-vllm") {
		t.Errorf("exit %d, stderr %q", code, stderr)
	}
}

func TestTuneAutomaticUsers(t *testing.T) {
	cfg := writeTuneConfig(t, `
search:
  trials: 2
  population: 2
  users: 0
  duration: 20s
  warmup: 5s
run:
  ramp: 0s
sweep:
  max: 64
  duration: 20s
  warmup: 5s
`)
	out := filepath.Join(t.TempDir(), "out")
	code, _, stderr := tuneCLI(t, "-c", cfg, "--out", out)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	m := regexp.MustCompile(`the study tunes at (\d+) users`).FindStringSubmatch(stderr)
	if m == nil {
		t.Fatalf("no baseline sweep in the progress:\n%s", stderr)
	}
	// the baseline is not silent: its levels are shown as it runs
	if !regexp.MustCompile(`== baseline\n 0:\d\d 1/≤\d+ ETA ≤\S+ grid \d+ users`).MatchString(stderr) {
		t.Errorf("no baseline levels in the progress:\n%s", stderr)
	}
	// Resuming reuses the study's load without a new sweep.
	code, _, stderr = tuneCLI(t, "-c", cfg, "--out", out, "--trials", "3")
	if code != 0 {
		t.Fatalf("resume: exit %d: %s", code, stderr)
	}
	if !strings.Contains(stderr, "runs at "+m[1]+" users") || strings.Contains(stderr, "baseline sweep") {
		t.Errorf("resume did not reuse %s users:\n%s", m[1], stderr)
	}
	// An explicit other load is refused for this study.
	if code, _, stderr := tuneCLI(t, "-c", cfg, "--out", out, "--trials", "4", "--users", "1000"); code == 0 || !strings.Contains(stderr, "was evaluated at") {
		t.Errorf("other load: exit %d, %s", code, stderr)
	}
}

// Every objective metric the config schema accepts is one tune can read
// from a run (or measures itself: capacity) and has a unit to print.
func TestConfigObjectiveMetricsKnownToTune(t *testing.T) {
	m := tune.Metrics(&result.Result{})
	for _, name := range config.ObjectiveMetrics {
		if _, ok := m[name]; !ok && name != tune.MetricCapacity {
			t.Errorf("objective metric %q has no value", name)
		}
		if tune.Unit(name) == "" {
			t.Errorf("objective metric %q has no unit", name)
		}
	}
}
