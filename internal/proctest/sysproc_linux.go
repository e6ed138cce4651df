package proctest

import "syscall"

// sysProcAttr puts a child in its own process group (so its own children die
// with it) and kills it if the test process dies first.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
