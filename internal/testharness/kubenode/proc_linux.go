package kubenode

import "syscall"

// sysProcAttr puts a container's process in a group of its own (so that
// stopping reaches its children) that dies with the agent.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
