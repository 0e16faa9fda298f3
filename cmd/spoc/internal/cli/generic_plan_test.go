package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/spoc-project/spoc/engine"
	"github.com/spoc-project/spoc/internal/testharness/metricnames"
	"github.com/spoc-project/spoc/internal/testharness/testtool"
	"github.com/spoc-project/spoc/sim/serve"
	"github.com/spoc-project/spoc/telemetry"
)

// The strict server: this test binary, run with strictServerEnv set to a
// folder, records its argv there and accepts exactly the flags it
// declares — --listen PORT, --bind HOST, --seqs=N, --batch N — exiting 2
// on any other argument, as a third-party server with its own flag names
// does. It then serves spoc sim serve's simulated engine with those values
// in vLLM's names, so that a plan can run on it, and names its metrics its
// own way (acme_num_requests_running, …: metricnames.Rename), as such a
// server does.
const (
	strictServerEnv = "SPOC_TEST_STRICT_SERVER"
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
	argv := []string{"--port", port, "--host", host, "--model", "gpt-oss-20b",
		"--gpu", "H200-SXM", "--gpus", "1", "--tensor-parallel-size", "1"}
	if seqs != "" {
		argv = append(argv, "--max-num-seqs", seqs)
	}
	if batch != "" {
		argv = append(argv, "--max-num-batched-tokens", batch)
	}
	if err := serveRenamedSim(argv); err != nil {
		fmt.Fprintln(os.Stderr, "strict server:", err)
		return 1
	}
	return 0
}

// serveRenamedSim serves spoc sim serve's deployment for its command line
// argv in this process, with its metrics named acme_ where spoc sim serve
// names them vllm: (none of them a name telemetry's catalog knows), until
// SIGTERM.
func serveRenamedSim(argv []string) error {
	fs := pflag.NewFlagSet("sim serve", pflag.ContinueOnError)
	keys := addSimEngineFlags(fs)
	cl := serve.NewCommandLine(fs)
	if err := fs.Parse(argv); err != nil {
		return err
	}
	opts, err := cl.Parse(fs.Args())
	if err != nil {
		return err
	}
	settings, err := keys.settings(fs)
	if err != nil {
		return err
	}
	sc, err := simServeConfig("", settings, opts)
	if err != nil {
		return err
	}
	srv, err := serve.New(sc)
	if err != nil {
		return err
	}
	defer srv.Close()
	ln, err := net.Listen("tcp", opts.Addr)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	hs := &http.Server{Handler: metricnames.Rename(srv.Handler(), "/metrics", "vllm:", acmePrefix), ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	srv.Close() // ends the streams in flight
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return hs.Shutdown(sctx)
}

// acmePrefix replaces vllm: in the strict server's metric names.
const acmePrefix = "acme_"

// acmeMetricsYAML is engine.generic.metrics for the strict server: every
// role, by its acme_ name.
func acmeMetricsYAML() string {
	var b strings.Builder
	b.WriteString("    metrics:\n")
	for _, role := range telemetry.Roles() {
		md, _ := telemetry.RoleMetric(role)
		fmt.Fprintf(&b, "      %s: %s\n", role, strings.Replace(md.Name, "vllm:", acmePrefix, 1))
	}
	return b.String()
}

// genericPlanYAML is a live plan on the strict server with flavor
// generic: two searched parameters, each mapped by its own template.
func genericPlanYAML(server, argvDir string) string {
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
    env: {%s: %q}
    health_timeout: 1m
    stop_timeout: 10s
  generic:
    params:
      max-num-seqs: "--seqs={{.Value}}"
      max-num-batched-tokens: [--batch, "{{.Value}}"]
%sworkload:%ssearch:
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
  interval: 500ms
plan:
  fidelity: live
`, server, strictServerEnv, argvDir, acmeMetricsYAML(), rest)
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
	if err := os.WriteFile(cfg, []byte(genericPlanYAML(self, argvDir)), 0o644); err != nil {
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
	// telemetry read the server's own metric names (engine.generic.metrics):
	// none of them is a name telemetry's catalog knows, so a map ignored
	// leaves every level's engine columns unmeasured
	sum := readSummary(t, out)
	measured := 0
	for _, p := range sum.Sweep {
		if p.HasEngineTelemetry() && p.KVCacheUsageMax > 0 {
			measured++
		}
	}
	if measured == 0 {
		t.Errorf("no sweep level has engine telemetry from the server's acme_ metrics: %+v", sum.Sweep)
	}
	if tel := sum.Telemetry; tel == nil || tel.Engine.Running.Samples == 0 || tel.Engine.PrefixCacheQueries <= 0 {
		t.Errorf("the ceiling's telemetry did not read the mapped names: %+v", tel)
	}
	if strings.Contains(stdout, engine.NoGenericMetrics) {
		t.Errorf("the plan says it read no server metrics although engine.generic.metrics maps them:\n%s", stdout)
	}
	t.Logf("%d servers; parameter sets %q; %d of %d sweep levels with engine telemetry", len(files), keys(distinct), measured, len(sum.Sweep))
}

func keys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
