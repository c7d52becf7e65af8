//go:build !linux

package pgtest

import "syscall"

// sysProcAttr runs a child as cred (nil: as this process's user).
func sysProcAttr(cred *syscall.Credential) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Credential: cred}
}
