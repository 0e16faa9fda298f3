//go:build unix

package engine

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"strconv"
	"syscall"
)

// setProcessGroup makes cmd the leader of a new process group so that Stop
// reaches every process the server spawns (vLLM's engine core and
// tensor-parallel workers) with one signal, and (on Linux) has it signalled
// when spoc dies without stopping it.
func setProcessGroup(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	setParentDeathSignal(cmd)
}

// signalGroup sends sig to every process of group pgid; a group that no
// longer exists is not an error.
func signalGroup(pgid int, sig syscall.Signal) error {
	if err := syscall.Kill(-pgid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		return err
	}
	return nil
}

// groupAlive reports whether any process of group pgid is still running.
// Zombies do not count: an orphaned grandchild that has exited but whose new
// parent does not reap it (a container's init may not) is gone for our
// purpose. Without a readable /proc it falls back to kill(-pgid, 0), which
// counts zombies.
func groupAlive(pgid int) bool {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return syscall.Kill(-pgid, 0) == nil
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		state, pgrp, ok := procState(pid)
		if ok && pgrp == pgid && state != 'Z' && state != 'X' {
			return true
		}
	}
	return false
}

// processAlive reports whether pid exists and is not a zombie.
func processAlive(pid int) bool {
	if state, _, ok := procState(pid); ok {
		return state != 'Z' && state != 'X'
	}
	if _, err := os.Stat("/proc/self"); err == nil {
		return false // /proc works and pid is not in it
	}
	return syscall.Kill(pid, 0) == nil
}

// procState reads the state letter and process group of pid from
// /proc/PID/stat ("pid (comm) S ppid pgrp ...").
func procState(pid int) (state byte, pgrp int, ok bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0, false
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, 0, false
	}
	f := bytes.Fields(b[i+1:])
	if len(f) < 3 || len(f[0]) != 1 {
		return 0, 0, false
	}
	g, err := strconv.Atoi(string(f[2]))
	if err != nil {
		return 0, 0, false
	}
	return f[0][0], g, true
}
