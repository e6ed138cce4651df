package proctest

import (
	endian "encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// fileWatch wakes waiters when a file is written, created or renamed into
// place: an inotify watch on the file's directory (the file may not exist
// yet, or be replaced by a rename), keeping the events of that name.
type fileWatch struct {
	wakeup // woken at each event of the file
	name   string
	in     *os.File // the inotify instance, non-blocking: Close ends read
}

// watchFile starts watching path. Stop it with close.
func watchFile(path string) (*fileWatch, error) {
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		return nil, fmt.Errorf("inotify: %w", err)
	}
	mask := uint32(unix.IN_MODIFY | unix.IN_CLOSE_WRITE | unix.IN_CREATE | unix.IN_MOVED_TO)
	if _, err := unix.InotifyAddWatch(fd, filepath.Dir(path), mask); err != nil {
		_ = unix.Close(fd)
		return nil, fmt.Errorf("inotify watch of %s: %w", filepath.Dir(path), err)
	}
	w := &fileWatch{name: filepath.Base(path), in: os.NewFile(uintptr(fd), "inotify")}
	go w.read()
	return w, nil
}

// read wakes the waiters at each batch of events that names the file (or
// after an overflow, which may have dropped such an event).
func (w *fileWatch) read() {
	buf := make([]byte, 64<<10)
	for {
		n, err := w.in.Read(buf)
		if err != nil {
			w.wake() // closed: let waiters look one last time
			return
		}
		if w.concerns(buf[:n]) {
			w.wake()
		}
	}
}

// concerns reports whether a batch of inotify events names the file.
func (w *fileWatch) concerns(b []byte) bool {
	for len(b) >= unix.SizeofInotifyEvent {
		mask := endian.NativeEndian.Uint32(b[4:8])
		end := unix.SizeofInotifyEvent + int(endian.NativeEndian.Uint32(b[12:16]))
		if end > len(b) {
			return true
		}
		if mask&unix.IN_Q_OVERFLOW != 0 || strings.TrimRight(string(b[unix.SizeofInotifyEvent:end]), "\x00") == w.name {
			return true
		}
		b = b[end:]
	}
	return false
}

func (w *fileWatch) close() { _ = w.in.Close() }
