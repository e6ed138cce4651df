package couchtest

import "syscall"

// sysProcAttr makes the kernel kill the server if the test binary dies.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
