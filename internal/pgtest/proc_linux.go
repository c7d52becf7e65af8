package pgtest

import "syscall"

// sysProcAttr runs a child as cred (nil: as this process's user) and has
// the kernel send it SIGQUIT, PostgreSQL's immediate shutdown, when the
// process that started it dies, so that a test binary killed by its timeout
// leaves no server behind. (The kernel sends it when the thread that
// started the child exits; Go keeps its threads for the life of the process
// unless a goroutine locked to one with runtime.LockOSThread returns.)
func sysProcAttr(cred *syscall.Credential) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Credential: cred, Pdeathsig: syscall.SIGQUIT}
}
