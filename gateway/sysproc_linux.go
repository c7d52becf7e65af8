package gateway

import (
	"os/exec"
	"syscall"
)

// stopWithParent makes a stdio upstream die with the gateway, even when the
// gateway is killed before it can close the upstream's stdin.
func stopWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
