package worker

import (
	"os/exec"
	"syscall"
)

// dieWithParent kills a worker process when the test binary dies (a test
// timeout), so that no worker outlives its test.
func dieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
