//go:build !linux

package gateway

import "os/exec"

// stopWithParent has no portable form outside Linux: a stdio upstream is
// stopped when the gateway closes it.
func stopWithParent(*exec.Cmd) {}
