package cli

import (
	"net"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spoc-project/spoc/loadgen/testserver"
)

// TestRunSendsNoKeyUnlessConfigured checks the headers a test server
// records: a key in the environment (OPENAI_API_KEY, which every OpenAI
// user has) is not sent unless run.api_key_env names it, and a configured
// key never goes over plain http to another machine unless
// run.api_key_plain_http says so.
func TestRunSendsNoKeyUnlessConfigured(t *testing.T) {
	if testing.Short() {
		t.Skip("three short runs")
	}
	const key = "sk-spoc-test-secret"
	t.Setenv("OPENAI_API_KEY", key)
	t.Setenv("SPOC_TEST_KEY", key)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "spoc.yaml")
	if err := os.WriteFile(cfg, []byte(smallWorkload), 0o644); err != nil {
		t.Fatal(err)
	}
	window := []string{"--users", "2", "--duration", "500ms", "--warmup", "100ms", "--ramp", "50ms"}
	srv := testserver.Start(testserver.Config{FirstTokenDelay: 5 * time.Millisecond, TokenInterval: time.Millisecond, KeepLog: true})
	defer srv.Close()
	code, _, stderr := runLoadCLI(t, append([]string{"run", "-c", cfg, "--target", srv.URL, "--out", filepath.Join(dir, "a.jsonl")}, window...)...)
	if code != 0 {
		t.Fatalf("run exit %d: %s", code, stderr)
	}
	log := srv.Log()
	if len(log) == 0 {
		t.Fatal("the server logged no request")
	}
	for _, q := range log {
		if q.Authorization {
			t.Fatalf("a request carried an Authorization header though no run.api_key_env is configured: %+v", q)
		}
	}

	// A server of this machine on a non-loopback address: plain http to it
	// is what an in-cluster Service looks like.
	ip := nonLoopbackIP(t)
	remote := testserver.New(testserver.Config{FirstTokenDelay: 5 * time.Millisecond, TokenInterval: time.Millisecond, KeepLog: true})
	hs := httptest.NewUnstartedServer(remote)
	ln, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		t.Skipf("listen on %s: %v", ip, err)
	}
	hs.Listener = ln
	hs.Start()
	defer hs.Close()
	code, stdout, stderr := runLoadCLI(t, append([]string{"run", "-c", cfg, "--target", hs.URL, "--api-key-env", "SPOC_TEST_KEY", "--out", filepath.Join(dir, "b.jsonl")}, window...)...)
	if code == 0 || !strings.Contains(stderr, "run.api_key_plain_http") {
		t.Fatalf("run with a key over plain http to %s: exit %d, stderr %q; want a refusal naming run.api_key_plain_http", hs.URL, code, stderr)
	}
	if strings.Contains(stdout+stderr, key) {
		t.Errorf("the refusal prints the key: %s", stderr)
	}
	if n := len(remote.Log()); n != 0 {
		t.Fatalf("the refused run sent %d requests", n)
	}
	allow := filepath.Join(dir, "allow.yaml")
	if err := os.WriteFile(allow, []byte(smallWorkload+"run:\n  api_key_plain_http: true\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, stderr = runLoadCLI(t, append([]string{"run", "-c", allow, "--target", hs.URL, "--api-key-env", "SPOC_TEST_KEY", "--out", filepath.Join(dir, "c.jsonl")}, window...)...)
	if code != 0 {
		t.Fatalf("run with run.api_key_plain_http: exit %d: %s", code, stderr)
	}
	for _, q := range remote.Log() {
		if !q.Authorization {
			t.Fatalf("with run.api_key_plain_http a request went without the key: %+v", q)
		}
	}
}

// nonLoopbackIP is an address of this machine other than loopback.
func nonLoopbackIP(t *testing.T) string {
	t.Helper()
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Skipf("interface addresses: %v", err)
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && !n.IP.IsLoopback() && n.IP.To4() != nil {
			return n.IP.String()
		}
	}
	t.Skip("this machine has no non-loopback IPv4 address")
	return ""
}
