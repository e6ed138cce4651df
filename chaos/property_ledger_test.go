package chaos_test

import (
	"context"
	"errors"
	"fmt"
	"hash/adler32"
	"io/fs"
	"os"
	"sort"
	"time"

	"github.com/asyncstageout/aso/state"
)

// digest is what the property test remembers of a file: its size and
// adler32, read from the file system.
type digest struct {
	size  int64
	adler string
}

func (d digest) String() string { return fmt.Sprintf("%d bytes, adler32 %s", d.size, d.adler) }

func digestOf(data []byte) digest {
	return digest{size: int64(len(data)), adler: fmt.Sprintf("%08x", adler32.Checksum(data))}
}

// readDigest reads the file at path; ok is false when there is none.
func readDigest(path string) (d digest, ok bool, err error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return digest{}, false, nil
	}
	if err != nil {
		return digest{}, false, err
	}
	return digestOf(data), true, nil
}

// doneFile is the file a done transfer names, as it was when the check
// first saw the transfer done.
type doneFile struct {
	path string
	was  digest
}

// ledger is the property test's own record of the files it must find
// unchanged, kept apart from aso's records: the sources it wrote, the
// files it put at destinations by hand, and the destination file of every
// transfer it has seen done.
type ledger struct {
	sources map[string]digest   // path -> content when written
	placed  map[string]digest   // path -> content when put there by hand
	done    map[string]doneFile // transfer ID -> its file
}

func newLedger() *ledger {
	return &ledger{sources: map[string]digest{}, placed: map[string]digest{}, done: map[string]doneFile{}}
}

// check is the invariant, read from outside after a step: every source and
// every hand-placed file is present with the content it was given; every
// transfer the store says is done names a file that holds the bytes its
// request asked for when the check first sees it done, and holds them
// unchanged at every later check. pathOf maps a transfer to the file its
// destination is on disk (site roots reached through links resolved). It
// returns one line per broken promise.
func (l *ledger) check(s state.Store, pathOf func(t *state.Transfer) string) ([]string, int, error) {
	var bad []string
	bad = append(bad, unchanged("source", l.sources)...)
	bad = append(bad, unchanged("hand-placed file", l.placed)...)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ts, err := s.List(ctx, state.Filter{States: []state.State{state.StateDone}})
	if err != nil {
		return bad, 0, fmt.Errorf("list done transfers: %w", err)
	}
	for i := range ts {
		t := &ts[i]
		if bad1 := l.checkDone(t, pathOf(t)); bad1 != "" {
			bad = append(bad, bad1)
		}
	}
	return bad, len(ts), nil
}

// checkDone checks the file of one done transfer at path.
func (l *ledger) checkDone(t *state.Transfer, path string) string {
	got, ok, err := readDigest(path)
	if err != nil {
		return fmt.Sprintf("%s: done, and its file %s cannot be read: %v", t.ID, path, err)
	}
	prev, seen := l.done[t.ID]
	switch {
	case seen && !ok:
		return fmt.Sprintf("%s: done, and its file %s (%s) was deleted", t.ID, path, prev.was)
	case seen && got != prev.was:
		return fmt.Sprintf("%s: done, and its file %s was changed: %s, was %s", t.ID, path, got, prev.was)
	case seen:
		return ""
	case !ok:
		return fmt.Sprintf("%s: done (%q), but there is no file at %s", t.ID, t.Reason, path)
	case got.size != t.Size || got.adler != t.Checksums["adler32"]:
		return fmt.Sprintf("%s: done (%q), but %s holds %s, not the %d bytes with adler32 %s it asked for",
			t.ID, t.Reason, path, got, t.Size, t.Checksums["adler32"])
	}
	l.done[t.ID] = doneFile{path: path, was: got}
	return ""
}

// unchanged checks that every file of files is present with its content.
func unchanged(what string, files map[string]digest) []string {
	paths := make([]string, 0, len(files))
	for p := range files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	var bad []string
	for _, p := range paths {
		got, ok, err := readDigest(p)
		switch {
		case err != nil:
			bad = append(bad, fmt.Sprintf("%s %s cannot be read: %v", what, p, err))
		case !ok:
			bad = append(bad, fmt.Sprintf("%s %s (%s) was deleted", what, p, files[p]))
		case got != files[p]:
			bad = append(bad, fmt.Sprintf("%s %s was changed: %s, was %s", what, p, got, files[p]))
		}
	}
	return bad
}
