//go:build !linux

package fleet

import "syscall"

// agentProcAttr puts an agent of the fleet in a process group of its own,
// so that a second signal kills it together with its gfal-rm.
func agentProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
