package proctest

import (
	"os/exec"
	"syscall"
)

// dieWithParent kills the child when the test binary dies (a test
// timeout), so that no process outlives its test.
func dieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
