// Package promtest runs a real Prometheus server for integration tests, as
// net/http/httptest runs an HTTP server.
package promtest

import (
	"bytes"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/spoc-project/spoc/internal/testharness/testtool"
)

// Start runs the Prometheus binary (Debian package prometheus) on a free
// loopback port with a temporary storage directory, scraping every target
// of jobs (job name → metrics URL) every interval, and returns its base URL
// once it is ready; it stops when the test ends. Without the binary the test
// is skipped, or fails under CI=true with the install command.
func Start(t testing.TB, jobs map[string]string, interval time.Duration) string {
	t.Helper()
	bin := testtool.Find(t, "apt-get install -y prometheus", "prometheus")
	dir := t.TempDir()
	var cfg strings.Builder
	fmt.Fprintf(&cfg, "global:\n  scrape_interval: %s\n  scrape_timeout: %s\nscrape_configs:\n", interval, interval)
	names := make([]string, 0, len(jobs))
	for job := range jobs {
		names = append(names, job)
	}
	sort.Strings(names)
	for _, job := range names {
		u, err := url.Parse(jobs[job])
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&cfg, "  - job_name: %q\n    metrics_path: %q\n    static_configs:\n      - targets: [%q]\n", job, u.Path, u.Host)
	}
	cfgPath := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfgPath, []byte(cfg.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	var logs bytes.Buffer
	cmd := exec.Command(bin,
		"--config.file="+cfgPath,
		"--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr,
		"--log.level=warn")
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatalf("start prometheus: %v", err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	base := "http://" + addr
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(base + "/-/ready")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return base
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("prometheus at %s not ready after 30 s: %v\n%s", base, err, logs.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
}
