package memfile

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/asyncstageout/aso/state"
)

// Stats counts what a handle did to its file, for benchmarks.
type Stats struct {
	Fsyncs         int64 // fsyncs of the state file
	JournalRecords int64 // records appended by this handle
	Compactions    int64 // compactions done by this handle
	Reloads        int64 // full re-reads after another handle compacted the file
	// Decoded counts the transfers calls decoded from the file, CacheHits
	// those they took from the cache instead (reading a file at open and
	// catching up with others' records are not counted).
	Decoded, CacheHits int64
	// SyncTime is the time spent in fsync of journal records, CompactTime
	// the time spent compacting (fsyncs included).
	SyncTime, CompactTime time.Duration
}

// file is a Store's handle on its state file. It runs every call of the
// Store as one operation: under its mutex and the file's lock, on the
// file as it is now (what others appended applied first), staging the
// call's writes in a tx that is appended as one record. Its Stats and
// Compact are the Store's.
type file struct {
	mu     sync.Mutex
	j      journal
	now    func() time.Time
	closed bool
}

// openStateFile opens the state file at path (o with its defaults) and
// reads it, waiting at most o.LockWait for its lock.
func openStateFile(path string, o Options, now func() time.Time) (*file, error) {
	osf, err := openFile(path, o)
	if err != nil {
		return nil, err
	}
	f := &file{now: now, j: journal{path: path, opts: o, src: source{path: path}}}
	f.j.setFile(osf)
	f.j.reset()
	ctx, cancel := context.WithTimeout(context.Background(), o.LockWait)
	err = f.j.lock(ctx)
	cancel()
	if err != nil {
		f.j.f.Close()
		return nil, err
	}
	err = f.j.catchUp()
	f.j.unlock()
	if err != nil {
		f.j.f.Close()
		return nil, err
	}
	return f, nil
}

// Stats returns the counters of this handle.
func (f *file) Stats() Stats {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.j.stats
}

// Compact rewrites the file as a snapshot of the current documents.
func (f *file) Compact(ctx context.Context) error {
	return f.locked(ctx, "compact", func(j *journal) error {
		if err := state.CheckFence(ctx); err != nil {
			return fmt.Errorf("memfile: compact: %w", err)
		}
		if j.opts.ReadOnly {
			return fmt.Errorf("memfile: compact %s: %w", j.path, ErrReadOnly)
		}
		if err := j.compact(); err != nil {
			return fmt.Errorf("memfile: compact %s: %w", j.path, err)
		}
		return nil
	})
}

// close releases the file. Later calls fail.
func (f *file) close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return nil
	}
	f.closed = true
	return f.j.close()
}

// locked runs fn under the handle's mutex and the file lock, once the
// records others appended are applied.
func (f *file) locked(ctx context.Context, call string, fn func(j *journal) error) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("memfile: %s: %w", call, err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return fmt.Errorf("memfile: %s: store %s is closed", call, f.j.path)
	}
	if err := f.j.lock(ctx); err != nil {
		return err
	}
	defer f.j.unlock()
	if err := f.j.catchUp(); err != nil {
		return err
	}
	return fn(&f.j)
}

// update runs fn on the current state as one operation and appends what
// it staged as one record (fsynced when durable); then compacts the file
// if it is due. The caller's write fence is checked under the file lock:
// a caller paused while it waited for the lock may have lost its run
// lock.
func (f *file) update(ctx context.Context, call string, durable bool, fn func(x *tx, now time.Time) error) error {
	return f.locked(ctx, call, func(j *journal) error {
		if err := state.CheckFence(ctx); err != nil {
			return fmt.Errorf("memfile: %s: %w", call, err)
		}
		x := newTx(j.d, &j.src, rand.Uint64, &j.stats)
		if err := fn(x, f.now()); err != nil {
			return err
		}
		if err := j.commit(x, call, durable); err != nil {
			return err
		}
		j.compactIfDue()
		return nil
	})
}

// each applies r to the stored version of every ID (tx.each) in one
// operation.
func (f *file) each(ctx context.Context, call string, durable bool, ids []string, r rule) ([]state.Result, error) {
	return do(ctx, f, call, durable, func(x *tx, now time.Time) ([]state.Result, error) {
		return x.each(call, ids, r, now)
	})
}

// do runs fn as one operation of f (file.update) and returns its result,
// the zero T on an error. A call that only reads passes durable false: it
// stages nothing, and nothing is written.
func do[T any](ctx context.Context, f *file, call string, durable bool, fn func(x *tx, now time.Time) (T, error)) (T, error) {
	var out T
	err := f.update(ctx, call, durable, func(x *tx, now time.Time) error {
		var err error
		out, err = fn(x, now)
		return err
	})
	if err != nil {
		var zero T
		return zero, err
	}
	return out, nil
}
