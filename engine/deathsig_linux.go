package engine

import (
	"os/exec"
	"syscall"
)

// setParentDeathSignal asks the kernel to send the server SIGTERM when spoc
// dies, however it dies: a SIGKILLed spoc cannot stop its server's group
// itself. The signal goes to the group's leader only; vLLM shuts its engine
// core and workers down on SIGTERM. (Linux delivers it when the thread that
// started the child exits; Go keeps its threads unless a goroutine locked to
// one exits, which spoc never does.)
func setParentDeathSignal(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGTERM
}
