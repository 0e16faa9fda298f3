package engine

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spoc-project/spoc/internal/testharness/testtool"
)

func TestExecRunner(t *testing.T) {
	for _, bin := range []string{"cat", "sh", "sleep"} {
		testtool.Find(t, "apt-get install -y coreutils dash", bin)
	}
	ctx := context.Background()
	out, err := ExecRunner{Binary: "cat"}.Run(ctx, []byte("apiVersion: v1\n"))
	if err != nil || string(out) != "apiVersion: v1\n" {
		t.Errorf("stdin not passed: %q %v", out, err)
	}
	_, err = ExecRunner{Binary: "sh"}.Run(ctx, nil, "-c", "echo 'error: no context named gpu' >&2; exit 1")
	if err == nil || !strings.Contains(err.Error(), "no context named gpu") {
		t.Errorf("stderr not in error: %v", err)
	}
	var buf syncBuffer
	stop, err := ExecRunner{Binary: "sh"}.Start(ctx, &buf, "-c", "echo forwarding; exec sleep 60")
	if err != nil {
		t.Fatal(err)
	}
	for !strings.Contains(buf.String(), "forwarding") {
		time.Sleep(5 * time.Millisecond) // the test's timeout bounds this
	}
	if err := stop(); err != nil {
		t.Errorf("stop: %v", err)
	}
	if err := stop(); err != nil {
		t.Errorf("second stop: %v", err)
	}
}

type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
