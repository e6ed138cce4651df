package proctest

import (
	"errors"
	"fmt"
	"time"

	"golang.org/x/sys/unix"
)

// waitStopped waits until every thread of p has stopped after a SIGSTOP,
// or p has exited, at most d. waitid(WSTOPPED) reports a child only once
// its group stop is complete; WNOWAIT leaves the report (and an exit) in
// place, so that Go's own wait of the child, which asks for exits only,
// still reaps it.
func waitStopped(p *Proc, d time.Duration) error {
	done := make(chan error, 1)
	go func() {
		var info unix.Siginfo
		for {
			err := unix.Waitid(unix.P_PID, p.Pid(), &info, unix.WSTOPPED|unix.WEXITED|unix.WNOWAIT, nil)
			if errors.Is(err, unix.EINTR) {
				continue
			}
			if errors.Is(err, unix.ECHILD) {
				err = nil // reaped already: it stopped for good
			}
			done <- err
			return
		}
	}()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case err := <-done:
		return err
	case <-t.C:
		return fmt.Errorf("%s did not stop within %s of SIGSTOP", p.Name, d)
	}
}
