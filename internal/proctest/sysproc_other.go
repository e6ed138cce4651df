//go:build !linux

package proctest

import "syscall"

// sysProcAttr puts a child in its own process group, so its own children die
// with it.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
