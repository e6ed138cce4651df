package proctest

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// PauseOutsideStore freezes p (SIGSTOP) at a moment it holds no lock of
// the World's file store: an agent frozen inside a call of a memfile store
// holds the file's flock, and every other process waits for it until it
// resumes. It pauses p, tries the flock without waiting, and while p holds
// it resumes p for a moment and tries again. A CouchDB World has no such
// lock: p is paused at once. It fails the test if p never lets go of the
// lock, or exits first.
func (w *World) PauseOutsideStore(p *Proc) {
	w.t.Helper()
	if w.opts.Couch {
		p.Pause()
		return
	}
	f, err := os.Open(strings.TrimPrefix(w.StateURL, "file:"))
	if err != nil {
		w.t.Fatalf("proctest: %v", err)
	}
	defer f.Close()
	for try := 0; try < 1000; try++ {
		p.Pause()
		waitStopped(p.Pid())
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			_ = unix.Flock(int(f.Fd()), unix.LOCK_UN)
			return
		}
		if !errors.Is(err, unix.EWOULDBLOCK) {
			w.t.Fatalf("proctest: flock %s: %v", f.Name(), err)
		}
		p.Resume()
		select {
		case <-p.Done():
			w.t.Fatalf("proctest: %s exited before it could be paused outside the store\n%s", p.Name, p.Tail(20))
		case <-time.After(time.Millisecond):
		}
	}
	w.t.Fatalf("proctest: %s held the file store's lock at each of 1000 pauses", p.Name)
}

// waitStopped waits (at most a second) until every thread of process pid
// has stopped: a signal's delivery to all of them is not immediate.
func waitStopped(pid int) {
	deadline := time.Now().Add(time.Second)
	for time.Now().Before(deadline) {
		tasks, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/stat", pid))
		if err != nil || len(tasks) == 0 {
			return // not Linux, or gone: nothing to wait for
		}
		stopped := true
		for _, t := range tasks {
			b, err := os.ReadFile(t)
			i := bytes.LastIndexByte(b, ')')
			if err == nil && i >= 0 && i+2 < len(b) && b[i+2] != 'T' && b[i+2] != 't' {
				stopped = false
				break
			}
		}
		if stopped {
			return
		}
		time.Sleep(time.Millisecond)
	}
}
