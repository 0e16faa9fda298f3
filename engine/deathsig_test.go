//go:build linux

package engine

import (
	"bufio"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestServerDiesWithKilledSpoc SIGKILLs a process that started a server the
// way the launchers do and checks that the server goes too.
func TestServerDiesWithKilledSpoc(t *testing.T) {
	parent := exec.Command(os.Args[0], "-test.run=^$")
	parent.Env = append(os.Environ(), parentHelperEnv+"="+fakeServer)
	out, err := parent.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := parent.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		_ = parent.Process.Kill()
		t.Fatalf("read the server's pid: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		_ = parent.Process.Kill()
		t.Fatalf("server pid %q: %v", line, err)
	}
	if !processAlive(pid) {
		t.Fatalf("server %d not running before the kill", pid)
	}
	_ = parent.Process.Kill() // SIGKILL: no chance to stop the server
	_ = parent.Wait()
	deadline := time.Now().Add(10 * time.Second)
	for processAlive(pid) {
		if time.Now().After(deadline) {
			_ = syscall.Kill(-pid, syscall.SIGKILL)
			t.Fatalf("server %d still running 10 s after its parent was SIGKILLed", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
