//go:build !linux

package engine

import "os/exec"

// setParentDeathSignal is Linux-only; elsewhere a SIGKILLed spoc leaves its
// server running.
func setParentDeathSignal(*exec.Cmd) {}
