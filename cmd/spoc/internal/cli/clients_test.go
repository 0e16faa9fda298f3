package cli

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/spoc-project/spoc/internal/testharness/testtool"
	"github.com/spoc-project/spoc/result"
)

// startSimServer starts spoc sim serve (gpt-oss-20b on an H200, vLLM's
// routes and fields, any port) as its own process with extra flags and
// returns its base URL; the test stops it.
func startSimServer(t *testing.T, spoc string, extra ...string) string {
	t.Helper()
	args := append([]string{"sim", "serve", "--vllm-faithful", "openai/gpt-oss-20b", "--port", "0", "--gpu", "H200-SXM"}, extra...)
	srv := exec.Command(spoc, args...)
	stderr, err := srv.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Process.Kill(); _ = srv.Wait() })
	urls := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		re := regexp.MustCompile(`at (http://127\.0\.0\.1:\d+)`)
		for sc.Scan() {
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				urls <- m[1]
			}
		}
	}()
	select {
	case url := <-urls:
		return url
	case <-time.After(30 * time.Second):
		t.Fatal("spoc sim serve did not say where it serves")
	}
	return ""
}

// clientsConfig is the small workload, back to back, for split runs.
const clientsConfig = smallWorkload + `run:
  think_time_scale: 0
  mid_session_start: false
`

// children returns the process ids of pid's children, from the parent
// field of every /proc/N/stat (Linux).
func children(pid int) []int {
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	var out []int
	for _, st := range stats {
		b, err := os.ReadFile(st)
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces, so read after ')'
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		f := strings.Fields(s[i+1:])
		if len(f) < 2 || f[1] != strconv.Itoa(pid) {
			continue
		}
		if n, err := strconv.Atoi(strings.Fields(s)[0]); err == nil {
			out = append(out, n)
		}
	}
	return out
}

// startSplitRun starts spoc run --clients n in the background and waits
// until its n shard processes run and one has written a record.
func startSplitRun(t *testing.T, spoc, url string, n int, out string, duration string) (*exec.Cmd, *bytes.Buffer, []int) {
	t.Helper()
	cfg := filepath.Join(t.TempDir(), "spoc.yaml")
	writeFile(t, cfg, clientsConfig)
	cmd := exec.Command(spoc, "run", "-c", cfg, "--target", url, "--model", "openai/gpt-oss-20b", "--users", "6", "--ramp", "300ms",
		"--warmup", "500ms", "--duration", duration, "--clients", strconv.Itoa(n), "--out", out, "--quiet", "--json")
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &bytes.Buffer{}, &stderr
	tmp := t.TempDir() // where the shards' records files go
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		if kids := children(cmd.Process.Pid); len(kids) == n && wroteRecords(tmp) {
			return cmd, &stderr, kids
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("spoc run --clients %d did not start %d client processes: %v\n%s", n, n, children(cmd.Process.Pid), stderr.String())
	return nil, nil, nil
}

// wroteRecords reports whether some shard's records file under tmp holds
// a record.
func wroteRecords(tmp string) bool {
	files, _ := filepath.Glob(filepath.Join(tmp, "spoc-shards-*", "shard-*.jsonl"))
	for _, f := range files {
		if st, err := os.Stat(f); err == nil && st.Size() > 0 {
			return true
		}
	}
	return false
}

func exitCode(err error) int {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}

// A run split over three client processes against a spoc sim serve
// process: every record is in the merged stream once (request ids unique),
// each user's requests come from one shard, every shard sent some, and the
// summary carries each shard's own client check and start skew.
func TestRunClientsMergesShardsIntoOneStream(t *testing.T) {
	testtool.Long(t, "a split live run in real time against a spoc sim serve process: about 10 s")
	spoc := spocBinary(t)
	url := startSimServer(t, spoc)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "spoc.yaml")
	writeFile(t, cfg, clientsConfig)
	out := filepath.Join(dir, "r.jsonl")
	code, stdout, stderr := runSpoc(t, spoc, "run", "-c", cfg, "--target", url, "--model", "openai/gpt-oss-20b", "--users", "7", "--ramp", "300ms",
		"--warmup", "500ms", "--duration", "3s", "--clients", "3", "--out", out, "--quiet", "--json")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	sum, _ := checkMergedRun(t, stdout, out, 7, 3)
	for _, sh := range sum.Client.Shards {
		if sh.Health == nil || sh.Requests == 0 || sh.StartSkewMs < 0 || sh.StartSkewMs > 1000 {
			t.Errorf("shard %d's check: %+v", sh.Shard, sh)
		}
	}
}

// A client process that dies fails the run naming it; the other shards
// stop and the records path is left as it was (nothing half-merged).
func TestRunClientsShardDeathFailsTheRun(t *testing.T) {
	testtool.Long(t, "a split live run in real time, one client process killed: about 10 s")
	spoc := spocBinary(t)
	url := startSimServer(t, spoc)
	out := filepath.Join(t.TempDir(), "r.jsonl")
	cmd, stderr, kids := startSplitRun(t, spoc, url, 3, out, "30s")
	victim := kids[1]
	if err := syscall.Kill(victim, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-time.After(30 * time.Second):
		t.Fatalf("the run went on after a client process was killed\n%s", stderr.String())
	}
	if code := exitCode(err); code != 1 {
		t.Errorf("exit %d, want 1\n%s", code, stderr.String())
	}
	if want := fmt.Sprintf("(pid %d)", victim); !strings.Contains(stderr.String(), want) || !strings.Contains(stderr.String(), "client shard") {
		t.Errorf("the error does not name the killed shard %s:\n%s", want, stderr.String())
	}
	if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("records left at %s after a failed split run: %v", out, err)
	}
	for _, k := range kids {
		if syscall.Kill(k, 0) == nil && k != victim {
			if b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", k)); !strings.Contains(string(b), ") Z ") {
				t.Errorf("client process %d still runs after the run failed", k)
			}
		}
	}
}

// Ctrl-C to spoc reaches every client process: they stop, the run exits
// 130, and the merged records of what was measured are readable.
func TestRunClientsInterruptReachesEveryShard(t *testing.T) {
	testtool.Long(t, "a split live run in real time, interrupted: about 10 s")
	spoc := spocBinary(t)
	url := startSimServer(t, spoc)
	out := filepath.Join(t.TempDir(), "r.jsonl")
	cmd, stderr, kids := startSplitRun(t, spoc, url, 2, out, "30s")
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-time.After(30 * time.Second):
		t.Fatalf("the run did not stop on SIGINT\n%s", stderr.String())
	}
	if code := exitCode(err); code != ExitInterrupted {
		t.Errorf("exit %d, want %d\n%s", code, ExitInterrupted, stderr.String())
	}
	for _, k := range kids {
		if syscall.Kill(k, 0) == nil {
			t.Errorf("client process %d outlived the interrupted run", k)
		}
	}
	f, err := os.Open(out)
	if err != nil {
		t.Fatalf("no records after the interruption: %v\n%s", err, stderr.String())
	}
	defer f.Close()
	n := 0
	if _, err := result.ReadAll(f, out, func(*result.Record) error { n++; return nil }); err != nil || n == 0 {
		t.Errorf("records after the interruption: %d, %v", n, err)
	}
}

// checkMergedRun reads a split run's JSON summary (stdout) and its merged
// records file out, and checks that every request is there once, every
// user's requests came from one shard, every shard sent some, the summary
// counted every record and has each shard's client check. It returns the
// summary and the number of merged records.
func checkMergedRun(t *testing.T, stdout, out string, users, shards int) (result.Result, int64) {
	t.Helper()
	var sum result.Result
	if err := json.Unmarshal([]byte(stdout), &sum); err != nil {
		t.Fatalf("%v\n%s", err, stdout)
	}
	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ids := map[string]bool{}
	userShard := map[int]int{}
	perShard := map[int]int{}
	var n int64
	if _, err := result.ReadAll(f, out, func(r *result.Record) error {
		n++
		if ids[r.RequestID] {
			t.Errorf("request %s is in the merged records twice", r.RequestID)
		}
		ids[r.RequestID] = true
		if s, ok := userShard[r.User]; ok && s != r.Shard {
			t.Errorf("user %d's requests came from shards %d and %d", r.User, s, r.Shard)
		}
		userShard[r.User] = r.Shard
		perShard[r.Shard]++
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(userShard) != users {
		t.Errorf("%d users sent requests, want %d", len(userShard), users)
	}
	for s := range shards {
		if perShard[s] == 0 {
			t.Errorf("shard %d sent nothing: %v", s, perShard)
		}
	}
	if summarized := sum.Overall.Requests + sum.Excluded; n != summarized || n == 0 {
		t.Errorf("%d records merged, the summary counted %d", n, summarized)
	}
	if got := len(sum.Client.Shards); got != shards {
		t.Fatalf("the summary has %d shards' client checks, want %d: %+v", got, shards, sum.Client)
	}
	return sum, n
}
