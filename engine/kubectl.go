package engine

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Runner runs kubectl. The Kubernetes launcher issues every cluster
// operation through it, so tests can check the exact commands and a caller
// can route them elsewhere (a wrapper script, a remote shell).
type Runner interface {
	// Run runs kubectl with args and stdin (may be nil) and returns its
	// standard output; a non-zero exit is an error carrying standard error.
	Run(ctx context.Context, stdin []byte, args ...string) ([]byte, error)
	// Start starts a long-running kubectl (port-forward) writing its output
	// to w; calling stop ends it and waits for it to exit.
	Start(ctx context.Context, w io.Writer, args ...string) (stop func() error, err error)
}

// ExecRunner runs the kubectl binary.
type ExecRunner struct {
	// Binary is the kubectl executable; "" means "kubectl" on PATH.
	Binary string
}

var _ Runner = ExecRunner{}

func (r ExecRunner) binary() string {
	if r.Binary == "" {
		return "kubectl"
	}
	return r.Binary
}

// Run runs kubectl args.
func (r ExecRunner) Run(ctx context.Context, stdin []byte, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, r.binary(), args...)
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(stderr.String())
		if len(msg) > 2000 {
			msg = msg[len(msg)-2000:]
		}
		if msg != "" {
			return stdout.Bytes(), fmt.Errorf("%s %s: %w: %s", r.binary(), strings.Join(args, " "), err, msg)
		}
		return stdout.Bytes(), fmt.Errorf("%s %s: %w", r.binary(), strings.Join(args, " "), err)
	}
	return stdout.Bytes(), nil
}

// Start starts kubectl args in its own process group; stop sends it SIGTERM
// (SIGKILL after five seconds) and waits.
func (r ExecRunner) Start(ctx context.Context, w io.Writer, args ...string) (func() error, error) {
	cmd := exec.Command(r.binary(), args...)
	cmd.Stdout, cmd.Stderr = w, w
	setProcessGroup(cmd)
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s %s: %w", r.binary(), strings.Join(args, " "), err)
	}
	done := make(chan struct{})
	go func() {
		cmd.Wait()
		close(done)
	}()
	var once sync.Once
	stop := func() error {
		var err error
		once.Do(func() {
			pgid := cmd.Process.Pid
			if e := signalGroup(pgid, syscall.SIGTERM); e != nil {
				err = e
			}
			select {
			case <-done:
			case <-time.After(5 * time.Second):
				signalGroup(pgid, syscall.SIGKILL)
				<-done
			}
		})
		return err
	}
	return stop, nil
}

// Stream runs kubectl args (kubectl logs --follow) with its standard output
// copied to w as it comes, until it exits or ctx ends.
func (r ExecRunner) Stream(ctx context.Context, w io.Writer, args ...string) error {
	cmd := exec.CommandContext(ctx, r.binary(), args...)
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = w, &stderr
	if err := cmd.Run(); err != nil {
		if msg := strings.TrimSpace(stderr.String()); msg != "" {
			return fmt.Errorf("%s %s: %w: %s", r.binary(), strings.Join(args, " "), err, msg)
		}
		return fmt.Errorf("%s %s: %w", r.binary(), strings.Join(args, " "), err)
	}
	return nil
}
