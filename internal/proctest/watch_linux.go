package proctest

import (
	endian "encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// fileWatch wakes waiters when a file is written, created or renamed into
// place: a watch of the file's directory (the file may not exist yet, or
// be replaced by a rename), keeping the events of that name.
type fileWatch struct {
	wakeup // woken at each event of the file
	name   string
	wd     int32
}

// watchFile starts watching path. Stop it with close.
func watchFile(path string) (*fileWatch, error) {
	return watches.add(path)
}

func (w *fileWatch) close() { watches.remove(w) }

// watches is the one inotify instance of the test process (the instances
// of a user are few: 128 by default), shared by every fileWatch.
var watches inotify

// inotify reads the events of its instance and wakes the fileWatches of
// each directory it watches.
type inotify struct {
	once sync.Once
	err  error
	fd   int
	in   *os.File // fd, non-blocking: read waits in the poller

	mu   sync.Mutex
	dirs map[int32][]*fileWatch // by watch descriptor
}

func (n *inotify) start() error {
	n.once.Do(func() {
		fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
		if err != nil {
			n.err = fmt.Errorf("inotify: %w", err)
			return
		}
		n.fd, n.in, n.dirs = fd, os.NewFile(uintptr(fd), "inotify"), map[int32][]*fileWatch{}
		go n.read()
	})
	return n.err
}

func (n *inotify) add(path string) (*fileWatch, error) {
	if err := n.start(); err != nil {
		return nil, err
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	mask := uint32(unix.IN_MODIFY | unix.IN_CLOSE_WRITE | unix.IN_CREATE | unix.IN_MOVED_TO)
	wd, err := unix.InotifyAddWatch(n.fd, filepath.Dir(path), mask) // the same wd for the same directory
	if err != nil {
		return nil, fmt.Errorf("inotify watch of %s: %w", filepath.Dir(path), err)
	}
	w := &fileWatch{name: filepath.Base(path), wd: int32(wd)}
	n.dirs[w.wd] = append(n.dirs[w.wd], w)
	return w, nil
}

// remove stops w, and the watch of its directory once no fileWatch needs it.
func (n *inotify) remove(w *fileWatch) {
	n.mu.Lock()
	defer n.mu.Unlock()
	ws := n.dirs[w.wd]
	for i := range ws {
		if ws[i] == w {
			ws = append(ws[:i:i], ws[i+1:]...)
			break
		}
	}
	n.dirs[w.wd] = ws
	if len(ws) == 0 {
		delete(n.dirs, w.wd)
		_, _ = unix.InotifyRmWatch(n.fd, uint32(w.wd))
	}
	w.wake() // let its waiters look one last time
}

// read wakes, at each batch of events, the fileWatches they name (all of
// them after an overflow, which may have dropped events).
func (n *inotify) read() {
	buf := make([]byte, 64<<10)
	for {
		k, err := n.in.Read(buf)
		if err != nil {
			return // never closed: the instance lives as long as the test process
		}
		for _, w := range n.named(buf[:k]) {
			w.wake()
		}
	}
}

// named returns the fileWatches a batch of events names.
func (n *inotify) named(b []byte) []*fileWatch {
	n.mu.Lock()
	defer n.mu.Unlock()
	var out []*fileWatch
	for len(b) >= unix.SizeofInotifyEvent {
		wd, mask := int32(endian.NativeEndian.Uint32(b[0:4])), endian.NativeEndian.Uint32(b[4:8])
		end := min(len(b), unix.SizeofInotifyEvent+int(endian.NativeEndian.Uint32(b[12:16])))
		name := strings.TrimRight(string(b[unix.SizeofInotifyEvent:end]), "\x00")
		if mask&unix.IN_Q_OVERFLOW != 0 {
			for _, ws := range n.dirs {
				out = append(out, ws...)
			}
		}
		for _, w := range n.dirs[wd] {
			if w.name == name {
				out = append(out, w)
			}
		}
		b = b[end:]
	}
	return out
}
