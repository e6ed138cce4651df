package proctest

import (
	"errors"
	"fmt"
	"time"

	"golang.org/x/sys/unix"
)

// WaitExits waits until every process of pids has exited, at most d. The
// processes need not be the test's children (a fleet's agents are the
// fleet's): it polls a pidfd of each (pidfd_open), which becomes readable
// when its process exits; a pid that is gone already has exited. After d
// it returns an error that names the processes still running.
func WaitExits(pids []int, d time.Duration) error {
	var fds []unix.PollFd
	defer func() {
		for _, f := range fds {
			_ = unix.Close(int(f.Fd))
		}
	}()
	running := map[int32]int{} // pidfd: pid
	for _, pid := range pids {
		fd, err := unix.PidfdOpen(pid, 0)
		if errors.Is(err, unix.ESRCH) {
			continue
		}
		if err != nil {
			return fmt.Errorf("pidfd_open %d: %w", pid, err)
		}
		fds = append(fds, unix.PollFd{Fd: int32(fd), Events: unix.POLLIN})
		running[int32(fd)] = pid
	}
	deadline := time.Now().Add(d)
	for len(running) > 0 {
		left := time.Until(deadline)
		if left <= 0 {
			var still []int
			for _, pid := range running {
				still = append(still, pid)
			}
			return fmt.Errorf("processes %v still run after %s", still, d)
		}
		var wait []unix.PollFd
		for _, f := range fds {
			if _, ok := running[f.Fd]; ok {
				wait = append(wait, unix.PollFd{Fd: f.Fd, Events: unix.POLLIN})
			}
		}
		if _, err := unix.Poll(wait, int(left.Milliseconds())+1); err != nil && !errors.Is(err, unix.EINTR) {
			return fmt.Errorf("poll of pidfds: %w", err)
		}
		for _, f := range wait {
			if f.Revents != 0 {
				delete(running, f.Fd)
			}
		}
	}
	return nil
}
