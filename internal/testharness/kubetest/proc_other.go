//go:build !linux

package kubetest

import "syscall"

// sysProcAttr: outside Linux components do not die with the test process.
func sysProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{} }
