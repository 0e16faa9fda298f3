package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spoc-project/spoc/internal/testharness/testtool"
	"github.com/spoc-project/spoc/loadgen/testserver"
	"github.com/spoc-project/spoc/result"
)

// TestRunSaysITLUnmeasurableThroughABufferingProxy runs spoc run through a
// real HAProxy in front of a server that streams a token every 4 ms:
// without option http-no-delay HAProxy forwards the stream in bursts, so
// the client cannot measure the inter-token latency; the run says so,
// names the cause and does not judge the ITL clause. With the option the
// same path measures it.
func TestRunSaysITLUnmeasurableThroughABufferingProxy(t *testing.T) {
	if testing.Short() {
		t.Skip("two runs through HAProxy")
	}
	bin := testtool.Find(t, "apt-get install -y haproxy", "haproxy")
	srv := testserver.Start(testserver.Config{FirstTokenDelay: 5 * time.Millisecond, TokenInterval: 4 * time.Millisecond})
	defer srv.Close()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "spoc.yaml")
	sla := "sla:\n  ttft: {percentile: 95, max: 10s}\n  itl: {percentile: 95, max: 50ms}\n"
	if err := os.WriteFile(cfg, []byte(smallWorkload+sla), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		noDelay bool
	}{{"buffering", false}, {"http-no-delay", true}} {
		t.Run(tc.name, func(t *testing.T) {
			front := startHAProxy(t, bin, srv.URL, tc.noDelay)
			code, stdout, stderr := runLoadCLI(t, "run", "-c", cfg, "--target", front, "--users", "4", "--duration", "2s",
				"--warmup", "300ms", "--ramp", "100ms", "--out", filepath.Join(dir, tc.name+".jsonl"), "--json")
			if code != 0 && code != ExitSLANotMet {
				t.Fatalf("run exit %d: %s", code, stderr)
			}
			var res result.Result
			if err := json.Unmarshal([]byte(stdout), &res); err != nil {
				t.Fatalf("run --json: %v\n%s", err, stdout)
			}
			if res.Overall.OK == 0 {
				t.Fatalf("no request completed through HAProxy: %+v\n%s", res.Overall, stderr)
			}
			st := res.Stream
			t.Logf("%s: %d of %d token gaps 0 µs (%.0f %%), ITL p50 %.3f ms, TTFT p95 %.1f ms", tc.name, st.SameRead, st.Gaps, 100*st.Share, res.Overall.ITL.P50, res.Overall.TTFT.P95)
			if tc.noDelay {
				if st.ITLUnmeasurable {
					t.Errorf("ITL flagged unmeasurable with option http-no-delay: %s", st.Reason)
				}
				return
			}
			if !st.ITLUnmeasurable || !strings.Contains(st.Reason, "http-no-delay") {
				t.Fatalf("stream report %+v: want ITL unmeasurable, naming HAProxy's option http-no-delay", st)
			}
			for _, v := range res.SLA.Violations {
				if strings.Contains(v.Clause, "itl") {
					t.Errorf("the ITL clause was judged on bursts: %+v", v)
				}
			}
			unjudged := false
			for _, v := range res.SLA.Insufficient {
				unjudged = unjudged || (strings.Contains(v.Clause, "itl") && v.Unmeasurable)
			}
			if !unjudged || res.SLA.Pass {
				t.Errorf("verdict %+v: want the ITL clause unjudged (unmeasurable) and no pass", res.SLA)
			}
		})
	}
}

// startHAProxy runs bin in front of backend on a loopback port until the
// test ends and returns its base URL.
func startHAProxy(t *testing.T, bin, backend string, noDelay bool) string {
	t.Helper()
	u, err := url.Parse(backend)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	opt := ""
	if noDelay {
		opt = "    option http-no-delay\n"
	}
	conf := fmt.Sprintf("global\n    maxconn 256\ndefaults\n    mode http\n    timeout connect 5s\n    timeout client 60s\n    timeout server 60s\n%sfrontend f\n    bind 127.0.0.1:%d\n    default_backend b\nbackend b\n    server s1 %s\n", opt, port, u.Host)
	file := filepath.Join(t.TempDir(), "haproxy.cfg")
	if err := os.WriteFile(file, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	cmd := exec.Command(bin, "-f", file, "-db")
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if resp, err := http.Get(base + "/v1/models"); err == nil {
			resp.Body.Close()
			return base
		}
		if time.Now().After(deadline) {
			t.Fatalf("haproxy did not answer on %s: %s", base, log.String())
		}
	}
}
