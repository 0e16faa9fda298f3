package kubetest

import "syscall"

// sysProcAttr makes a component die with the test process, so that a test
// killed by its timeout leaves no API server behind.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
