package memfile

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/cenkalti/backoff/v4"
	"golang.org/x/sys/unix"
)

// journal is the state file as one handle has read it: the open file, how
// far it has been read and applied, the index of the documents it holds
// (db, whose spans point into it), and the policy of its compaction. It
// reads the records others appended (journal_read.go), appends records
// and compacts (journal_write.go), and purges (journal_purge.go). Its
// methods are called with the file handle's mutex held, and all but lock with
// the file lock held.
type journal struct {
	path string
	opts Options
	f    *os.File
	src  source // reads documents back from f
	d    *db
	off  int64 // bytes of the file applied to d
	line int   // lines of the file applied to d
	// snapEnd is the offset of the first journal record; -1 before one is seen
	snapEnd int64
	// noCompactBelow: after a failed compaction, wait until the file has
	// grown past this before trying again (a full disk must not make every
	// call rewrite the file).
	noCompactBelow int64
	wbuf           []byte // the encoding buffer of records, reused
	stats          Stats
}

// setFile makes f the state file of j.
func (j *journal) setFile(f *os.File) {
	j.f = f
	j.src.f = f
}

// reset forgets what was read: the next catchUp reads the file from its
// start.
func (j *journal) reset() {
	j.d, j.off, j.line, j.snapEnd = newDB(j.opts.CacheBytes), 0, 0, -1
}

// close closes the file and frees the memory of j, which a closed store
// that stays referenced would otherwise keep.
func (j *journal) close() error {
	j.d, j.src.buf, j.wbuf = nil, nil, nil
	return j.f.Close()
}

func (j *journal) warn(format string, args ...any) {
	if j.opts.Warn != nil {
		j.opts.Warn(fmt.Sprintf(format, args...))
	}
}

// lock takes the flock of the state file. If another handle replaced the
// file (compaction) it reopens it and starts over from the new file.
func (j *journal) lock(ctx context.Context) error {
	for {
		if err := j.flock(ctx); err != nil {
			return err
		}
		var held, named unix.Stat_t
		if err := unix.Fstat(int(j.f.Fd()), &held); err != nil {
			j.unlock()
			return fmt.Errorf("memfile: stat %s: %w", j.path, err)
		}
		if err := unix.Stat(j.path, &named); err != nil {
			j.unlock()
			return fmt.Errorf("memfile: state file %s: %w (was it removed?)", j.path, err)
		}
		if held.Dev == named.Dev && held.Ino == named.Ino {
			return nil
		}
		flags := os.O_RDWR
		if j.opts.ReadOnly {
			flags = os.O_RDONLY
		}
		f, err := os.OpenFile(j.path, flags, 0)
		if err != nil {
			j.unlock()
			return fmt.Errorf("memfile: reopen %s: %w", j.path, err)
		}
		j.f.Close() // releases the lock of the old file
		j.setFile(f)
		j.reset()
		j.stats.Reloads++
	}
}

// flock takes the exclusive flock of j.f, polling while another handle or
// process holds it, so that a holder that hangs cannot block a call past
// its context.
func (j *journal) flock(ctx context.Context) error {
	fd := int(j.f.Fd())
	try := func() error {
		err := unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB)
		if err != nil && !errors.Is(err, unix.EWOULDBLOCK) {
			return backoff.Permanent(err)
		}
		return err
	}
	if try() == nil {
		return nil
	}
	b := backoff.NewExponentialBackOff()
	b.InitialInterval, b.MaxInterval, b.MaxElapsedTime = 50*time.Microsecond, 5*time.Millisecond, 0
	if err := backoff.Retry(try, backoff.WithContext(b, ctx)); err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("memfile: waiting for the lock of %s, held by another process: %w", j.path, ctx.Err())
		}
		return fmt.Errorf("memfile: lock %s: %w", j.path, err)
	}
	return nil
}

func (j *journal) unlock() { _ = unix.Flock(int(j.f.Fd()), unix.LOCK_UN) }
