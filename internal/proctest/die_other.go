//go:build !linux

package proctest

import "os/exec"

// dieWithParent is a no-op where Pdeathsig does not exist.
func dieWithParent(*exec.Cmd) {}
