package fleet

import "syscall"

// agentProcAttr puts an agent of the fleet in a process group of its own,
// so that a second signal kills it together with its gfal-rm, and kills it
// if the fleet process dies (as a host failure would), so that no agent is
// left running unwatched.
func agentProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
