package srm

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
)

// Check reads what is at url with the Deleter's gfal-stat and gfal-sum
// (see Inspector.Check). A directory there is an Err saying it is not a
// regular file: nothing the Deleter's callers may take for a copy.
func (d *Deleter) Check(ctx context.Context, url string, size int64) Existing {
	e := d.Inspector().Check(ctx, url, size)
	if e.NotFile != "" {
		e.Err = fmt.Errorf("srm: gfal-stat %s: not a regular file but a %s", url, e.NotFile)
	}
	return e
}

// Inspector is the Inspector that runs the gfal-stat and gfal-sum of d
// (see Sibling), with d's deadline and credentials.
func (d *Deleter) Inspector() *Inspector {
	in := &Inspector{Timeout: d.Timeout, Proxy: d.Proxy, CertDir: d.CertDir, TokenFile: d.TokenFile}
	if strings.ContainsRune(d.Command, '/') {
		in.Dir = filepath.Dir(d.Command)
	}
	return in
}

// Sibling is the program of the gfal command name (gfal-stat, gfal-sum)
// that Check runs: the one next to Command when that is a path and the
// directory has it (gfal2-util installed out of PATH), else name, looked up
// in PATH (Command is a wrapper script, or gfal-rm itself is in PATH).
func (d *Deleter) Sibling(name string) string { return d.Inspector().Program(name) }
