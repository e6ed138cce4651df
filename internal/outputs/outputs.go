// Package outputs keeps the files aso writes from replacing the files it
// reads. Before a command does any work, each path it will write (a run's
// report and metrics file, a purge's archive, fsck's repaired file, the
// man pages) is checked: one that names an input (the state store and its
// companion files, the sites file, the configuration file), however it is
// reached, or that cannot be written, is refused.
package outputs

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/asyncstageout/aso/srm"
)

// Input is a file aso reads, which no output may replace.
type Input struct {
	What string // what it is, for the error: "the state file"
	Path string // "": none
}

// Output is a file a command will write.
type Output struct {
	Flag string // what names it: "--report"
	Path string // "": none, nothing to check
	// Replace: written as a new file renamed over Path, so its directory
	// must be writable even when Path exists.
	Replace bool
	// MakeDirs: the command creates Path's missing directories.
	MakeDirs bool
}

// Check returns why out must not be written, or nil.
// It is refused when it is one of inputs: the same file through any
// symbolic or hard link, or the path that input would have (srm.SameFile,
// which compares devices and inodes), and when it cannot be written: it
// exists and is not a regular file, or is not writable, or its directory
// is missing (unless MakeDirs) or not writable.
func Check(out Output, inputs ...Input) error {
	if out.Path == "" {
		return nil
	}
	abs, err := filepath.Abs(out.Path)
	if err != nil {
		return fmt.Errorf("%s %s: %v", out.Flag, out.Path, err)
	}
	for _, in := range inputs {
		if in.Path == "" {
			continue
		}
		if ia, err := filepath.Abs(in.Path); err == nil && srm.SameFile(fileURL(abs), fileURL(ia)) {
			return fmt.Errorf("%s %s is %s (%s): aso never writes over what it reads; name another file", out.Flag, out.Path, in.What, in.Path)
		}
	}
	if why := unwritable(abs, out); why != "" {
		return fmt.Errorf("%s %s cannot be written: %s", out.Flag, out.Path, why)
	}
	return nil
}

// fileURL is the file:// URL of the absolute path p.
func fileURL(p string) string { return (&url.URL{Scheme: "file", Path: p}).String() }

// unwritable says why the file at abs cannot be written as out says, or "".
func unwritable(abs string, out Output) string {
	fi, err := os.Stat(abs)
	switch {
	case err == nil && fi.IsDir():
		return "it is a directory"
	case err == nil && !fi.Mode().IsRegular():
		return "it is not a regular file"
	case err == nil && !out.Replace:
		if err := unix.Access(abs, unix.W_OK); err != nil {
			return err.Error()
		}
		return ""
	case err != nil && !errors.Is(err, os.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR):
		return err.Error()
	}
	dir := filepath.Dir(abs)
	for out.MakeDirs && dir != "/" {
		if _, err := os.Lstat(dir); err == nil {
			break
		}
		dir = filepath.Dir(dir)
	}
	switch di, err := os.Stat(dir); {
	case err != nil:
		return fmt.Sprintf("its directory: %v", err)
	case !di.IsDir():
		return fmt.Sprintf("%s is not a directory", dir)
	}
	if err := unix.Access(dir, unix.W_OK|unix.X_OK); err != nil {
		return fmt.Sprintf("its directory %s: %v", dir, err)
	}
	return ""
}
