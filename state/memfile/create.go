package memfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/asyncstageout/aso/state"
)

// ErrNoStore is wrapped by the error of opening a state file that does not
// exist, without Options.Create: nothing is created (see Create). It wraps
// fs.ErrNotExist.
var ErrNoStore = fmt.Errorf("no such state file: %w", fs.ErrNotExist)

// ErrNotStateFile is wrapped by the error of opening a file that is not an
// aso state file (another program's file, named by mistake).
var ErrNotStateFile = errors.New("not an aso state file")

// Create makes an empty state file at path, and its directory, unless a
// file is there; created says whether it made one. Either way it then
// opens the file once, so that a file that is not a state file, or is
// damaged, is an error. It is idempotent.
func Create(path string) (created bool, err error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return false, fmt.Errorf("memfile: create %s: %w", path, err)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	switch {
	case err == nil:
		created = true
		f.Close()
	case !errors.Is(err, fs.ErrExist):
		return false, fmt.Errorf("memfile: create %s: %w", path, err)
	}
	// the first open writes the header of a new file under the file's
	// lock, and syncs it and its directory
	s, err := OpenOptions(path, state.Config{}, Options{})
	if err != nil {
		return created, err
	}
	return created, s.Close()
}

// openFile opens the state file, for reading only or for reading and
// writing. A missing file is ErrNoStore, unless o.Create (and not
// o.ReadOnly): then it and its directory are created.
func openFile(path string, o Options) (*os.File, error) {
	flags := os.O_RDWR
	switch {
	case o.ReadOnly:
		flags = os.O_RDONLY
	case o.Create:
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return nil, fmt.Errorf("memfile: open %s: %w", path, err)
		}
		flags |= os.O_CREATE
	}
	f, err := os.OpenFile(path, flags, 0o600)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("memfile: %s: %w", path, ErrNoStore)
	}
	if err != nil {
		return nil, fmt.Errorf("memfile: open %s: %w", path, err)
	}
	return f, nil
}
