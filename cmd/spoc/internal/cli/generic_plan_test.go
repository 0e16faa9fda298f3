package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/spoc-project/spoc/internal/testharness/testtool"
)

// The strict server: this test binary, run with strictServerEnv set to a
// folder, records its argv there and accepts exactly the flags it
// declares — --listen PORT, --bind HOST, --seqs=N, --batch N — exiting 2
// on any other argument, as a third-party server with its own flag names
// does. It then becomes (exec, same process) spoc sim serve with those
// values in vLLM's names, so that a plan can run on it.
const (
	strictServerEnv = "SPOC_TEST_STRICT_SERVER"
	strictSpocEnv   = "SPOC_TEST_STRICT_SPOC"
)

func strictServer(dir string) int {
	args := os.Args[1:]
	b, _ := json.Marshal(args)
	if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("argv-%d.json", os.Getpid())), b, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "strict server:", err)
		return 1
	}
	var port, host, seqs, batch string
	for i := 0; i < len(args); i++ {
		a := args[i]
		value := func() string {
			i++
			if i == len(args) {
				fmt.Fprintf(os.Stderr, "strict server: %s needs a value\n", a)
				os.Exit(2)
			}
			return args[i]
		}
		switch {
		case a == "--listen":
			port = value()
		case a == "--bind":
			host = value()
		case a == "--batch":
			batch = value()
		case strings.HasPrefix(a, "--seqs="):
			seqs = strings.TrimPrefix(a, "--seqs=")
		default:
			fmt.Fprintf(os.Stderr, "strict server: unknown flag: %s\n", a)
			return 2
		}
	}
	if port == "" || host == "" {
		fmt.Fprintln(os.Stderr, "strict server: --listen and --bind are required")
		return 2
	}
	spoc := os.Getenv(strictSpocEnv)
	argv := []string{spoc, "sim", "serve", "--port", port, "--host", host, "--model", "gpt-oss-20b",
		"--gpu", "H200-SXM", "--gpus", "1", "--tensor-parallel-size", "1"}
	if seqs != "" {
		argv = append(argv, "--max-num-seqs", seqs)
	}
	if batch != "" {
		argv = append(argv, "--max-num-batched-tokens", batch)
	}
	err := syscall.Exec(spoc, argv, os.Environ())
	fmt.Fprintln(os.Stderr, "strict server: exec spoc sim serve:", err)
	return 1
}

// genericPlanYAML is a live plan on the strict server with flavor
// generic: two searched parameters, each mapped by its own template.
func genericPlanYAML(server, argvDir, spoc string) string {
	live := livePlanYAML("process", "H200-SXM", nil)
	_, rest, _ := strings.Cut(live, "workload:")
	rest, _, _ = strings.Cut(rest, "search:")
	return fmt.Sprintf(`engine:
  kind: process
  flavor: generic
  model: gpt-oss-20b
  gpu: H200-SXM
  gpus: 1
  tensor_parallel_size: 1
  max_model_len: 32768
  process:
    command: [%q, --listen, "{{.Port}}", --bind, "{{.Host}}"]
    env: {%s: %q, %s: %q}
    health_timeout: 1m
    stop_timeout: 10s
  generic:
    params:
      max-num-seqs: "--seqs={{.Value}}"
      max-num-batched-tokens: [--batch, "{{.Value}}"]
workload:%ssearch:
  trials: 3
  warmup: 1s
  duration: 3s
  space:
    - {name: max-num-seqs, type: int, low: 8, high: 64}
    - {name: max-num-batched-tokens, type: int, low: 1024, high: 8192, log: true}
sweep:
  start: 16
  max: 64
  resolution_users: 4
  resolution_fraction: 0.25
  top_k: 1
  seeds: 1
  min_runs: 3
  max_runs: 3
telemetry:
  enabled: false
plan:
  fidelity: live
`, server, strictServerEnv, argvDir, strictSpocEnv, spoc, rest)
}

// TestGenericPlanPassesOnlyDeclaredFlags is issue 35's acceptance for
// flavor generic: a live plan on a server that exits on any flag it does
// not know completes, and the argv of every server spoc started holds
// only the command template and the two templated parameters — no
// --host, no vLLM flag. The searched values reach the server.
func TestGenericPlanPassesOnlyDeclaredFlags(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a live spoc plan against a separate server process")
	}
	testtool.Long(t, "a live plan on a strict generic server in real time: about a minute")
	t.Parallel()
	spoc := spocBinary(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	argvDir := filepath.Join(dir, "argv")
	if err := os.Mkdir(argvDir, 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "generic.yaml")
	if err := os.WriteFile(cfg, []byte(genericPlanYAML(self, argvDir, spoc)), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runSpoc(t, spoc, "config", "check", "-c", cfg)
	if code != 0 {
		t.Fatalf("config check exit %d: %s%s", code, stdout, stderr)
	}
	out := filepath.Join(dir, "out")
	code, stdout, stderr = runSpoc(t, spoc, "plan", "-c", cfg, "--out", out)
	if code != 0 {
		t.Fatalf("plan exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	files, _ := filepath.Glob(filepath.Join(argvDir, "argv-*.json"))
	if len(files) < 2 {
		t.Fatalf("%d servers started, want the baseline's and the trials'", len(files))
	}
	distinct := map[string]bool{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var argv []string
		if err := json.Unmarshal(b, &argv); err != nil {
			t.Fatal(err)
		}
		var seqs, batch bool
		for i := 0; i < len(argv); i++ {
			switch a := argv[i]; {
			case a == "--listen" || a == "--bind":
				i++
			case a == "--batch":
				batch = true
				i++
			case strings.HasPrefix(a, "--seqs="):
				seqs = true
			default:
				t.Errorf("%s: undeclared argument %q reached the server: %q", f, a, argv)
			}
		}
		if !seqs || !batch {
			// the baseline runs the server's own defaults: no parameter
			if seqs || batch || len(argv) != 4 {
				t.Errorf("%s: one of the two templated parameters without the other: %q", f, argv)
			}
		}
		distinct[strings.Join(argv[4:], " ")] = true
	}
	if len(distinct) < 2 {
		t.Errorf("every server ran the same parameters %v: the search did not reach the server", distinct)
	}
	// the command to run is the generic one, not vllm serve
	if !strings.Contains(stdout, "configuration: "+self+" --listen ") || strings.Contains(stdout, "vllm serve") {
		t.Errorf("the command to run is not the templated command line:\n%s", stdout)
	}
	t.Logf("%d servers; parameter sets %q", len(files), keys(distinct))
}

func keys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
