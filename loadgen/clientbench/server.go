package clientbench

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime/debug"
	"strings"
	"time"

	"github.com/spoc-project/spoc/loadgen"
	"github.com/spoc-project/spoc/loadgen/testserver"
)

// PinnedEnv marks a process already started under taskset (Pin, and the
// test server Run starts): it does not pin itself again.
const PinnedEnv = "SPOC_BENCH_PINNED"

// Serve runs the streaming test server with the log of every emission
// kept on addr until ctx ends; ready receives its base URL once it
// listens (spoc bench client --serve prints it for Run to read).
func Serve(ctx context.Context, addr string, firstToken, interval time.Duration, ready func(url string)) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen %s: %w", addr, err)
	}
	// The server keeps a log of every emission; a GC cycle that stalls its
	// writers makes bursts every client then has to absorb, so it runs with
	// the same relaxed GC target as the client.
	if _, set := os.LookupEnv("GOGC"); !set {
		debug.SetGCPercent(loadgen.DefaultGCPercent)
	}
	srv := &http.Server{Handler: testserver.New(testserver.Config{
		FirstTokenDelay: firstToken, TokenInterval: interval, KeepLog: true,
	})}
	ready("http://" + ln.Addr().String())
	go func() {
		<-ctx.Done()
		_ = srv.Close()
	}()
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve: %w", err)
	}
	return nil
}

// server is a test server process Run started.
type server struct {
	url  string
	pid  int
	stop func()
}

// startServer runs argv pinned to cpus and reads its URL from its first
// line of output.
func startServer(ctx context.Context, argv []string, cpus string, log io.Writer) (*server, error) {
	if len(argv) == 0 {
		return nil, errors.New("no test server: give a Target or a ServerCommand")
	}
	argv = pinned(argv, cpus)
	sctx, cancel := context.WithCancel(ctx)
	c := exec.CommandContext(sctx, argv[0], argv[1:]...)
	c.Stderr = log
	c.Env = append(os.Environ(), PinnedEnv+"=1")
	c.Cancel = func() error { return c.Process.Signal(os.Interrupt) }
	c.WaitDelay = 5 * time.Second
	stdout, err := c.StdoutPipe()
	if err != nil {
		cancel()
		return nil, err
	}
	if err := c.Start(); err != nil {
		cancel()
		return nil, fmt.Errorf("start test server: %w", err)
	}
	stop := func() { cancel(); _ = c.Wait() }
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		stop()
		return nil, fmt.Errorf("read test server address: %w", err)
	}
	// taskset execs the server in place, so the child's pid is the server's.
	return &server{url: strings.TrimSpace(line), pid: c.Process.Pid, stop: stop}, nil
}

// pinned prefixes argv with taskset -c cpus when cpus is set and taskset
// is installed.
func pinned(argv []string, cpus string) []string {
	if cpus == "" {
		return argv
	}
	if ts, err := exec.LookPath("taskset"); err == nil {
		return append([]string{ts, "-c", cpus}, argv...)
	}
	return argv
}

// Pin runs argv (this process's own command line, its executable first)
// again under taskset on cpus, with this process's stdio, and waits for it,
// so that the whole benchmark client runs on the cores it was given. It
// reports false, and does nothing, when cpus is empty, this process is
// already pinned (PinnedEnv) or taskset is missing (with a warning to
// stderr); the error of a run that failed is its *exec.ExitError.
func Pin(ctx context.Context, cpus string, argv []string, stdout, stderr io.Writer) (bool, error) {
	if cpus == "" || os.Getenv(PinnedEnv) == "1" {
		return false, nil
	}
	taskset, err := exec.LookPath("taskset")
	if err != nil {
		fmt.Fprintln(stderr, "spoc: warning: taskset not found (apt-get install -y util-linux); running unpinned")
		return false, nil
	}
	c := exec.CommandContext(ctx, taskset, append([]string{"-c", cpus}, argv...)...)
	c.Env = append(os.Environ(), PinnedEnv+"=1")
	c.Stdin, c.Stdout, c.Stderr = os.Stdin, stdout, stderr
	return true, c.Run()
}
