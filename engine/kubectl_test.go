package engine

import (
	"bytes"
	"context"
	"os/exec"
	"strings"
	"testing"
)

func TestExecRunner(t *testing.T) {
	for _, bin := range []string{"cat", "sh", "sleep"} {
		if _, err := exec.LookPath(bin); err != nil {
			t.Skipf("%s not on PATH", bin)
		}
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
	var buf bytes.Buffer
	stop, err := ExecRunner{Binary: "sh"}.Start(ctx, &buf, "-c", "echo forwarding; exec sleep 60")
	if err != nil {
		t.Fatal(err)
	}
	if err := stop(); err != nil {
		t.Errorf("stop: %v", err)
	}
	if err := stop(); err != nil {
		t.Errorf("second stop: %v", err)
	}
	if !strings.Contains(buf.String(), "forwarding") {
		t.Errorf("output not captured: %q", buf.String())
	}
}
