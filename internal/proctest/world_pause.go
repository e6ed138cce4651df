package proctest

import (
	"errors"
	"os"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// PauseOutsideStore freezes p (SIGSTOP) at a moment it holds no lock of
// the World's file store: an agent frozen inside a call of a memfile store
// holds the file's flock, and every other process waits for it until it
// resumes. It takes the file's flock itself, as a memfile store does
// (waiting while p or another process holds it), pauses p while holding
// it, waits until p has stopped, and lets go. A CouchDB World has no such
// lock: p is paused at once. It fails the test if p exits first, or holds
// the lock for a minute.
func (w *World) PauseOutsideStore(p *Proc) {
	w.t.Helper()
	if w.opts.Couch {
		p.Pause()
		return
	}
	f := w.lockStore(p, time.Minute)
	defer f.Close() // and so lets go of the lock
	p.Pause()
	if err := waitStopped(p, time.Minute); err != nil {
		w.t.Fatalf("proctest: pause %s: %v\n%s", p.Name, err, p.Tail(20))
	}
}

// lockStore takes the exclusive flock of the World's state file and
// returns the handle that holds it. Like a memfile store it takes it again
// on the new file when the file was replaced (compacted) meanwhile.
func (w *World) lockStore(p *Proc, d time.Duration) *os.File {
	w.t.Helper()
	path := strings.TrimPrefix(w.StateURL, "file:")
	deadline := time.Now().Add(d)
	for {
		f, err := os.Open(path)
		if err != nil {
			w.t.Fatalf("proctest: %v", err)
		}
		if err := flockUntil(f, p.Done(), time.Until(deadline)); err != nil {
			w.t.Fatalf("proctest: the flock of %s, to pause %s outside the store: %v\n%s", path, p.Name, err, p.Tail(20))
		}
		var held, named unix.Stat_t
		if unix.Fstat(int(f.Fd()), &held) == nil && unix.Stat(path, &named) == nil && held.Dev == named.Dev && held.Ino == named.Ino {
			return f
		}
		f.Close() // replaced while we waited: lock the new file
	}
}

// flockUntil takes the exclusive flock of f, waiting in the kernel (a
// blocking flock) until the holder lets go, at most d and while stop is
// open. When it gives up it leaves f to the waiting flock, which closes f
// (letting go of the lock) once the lock is granted.
func flockUntil(f *os.File, stop <-chan struct{}, d time.Duration) error {
	got := make(chan error) // unbuffered: a lock nobody takes is let go
	go func() {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX)
		select {
		case got <- err:
		default:
			f.Close()
		}
	}()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case err := <-got:
		return err
	case <-stop:
		return errors.New("the process exited")
	case <-t.C:
		return errors.New("held by another process for " + d.String())
	}
}
