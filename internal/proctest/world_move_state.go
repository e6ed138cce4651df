package proctest

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/asyncstageout/aso/state"
	"github.com/asyncstageout/aso/state/memfile"
)

// MoveState moves the state file of a memfile World into dir (for example
// a small tmpfs, to fill the disk under it) and points StateURL and the
// World's own store handle at the new file. Call it before any agent runs.
func (w *World) MoveState(dir string) {
	w.t.Helper()
	if w.opts.Couch {
		w.t.Fatalf("proctest: MoveState: the World's state is in CouchDB, not in a file")
	}
	old := strings.TrimPrefix(w.StateURL, "file:")
	data, err := os.ReadFile(old)
	if err != nil {
		w.t.Fatalf("proctest: MoveState: %v", err)
	}
	path := filepath.Join(dir, filepath.Base(old))
	w.write(path, data, 0o644)
	if err := w.store.Close(); err != nil {
		w.t.Fatalf("proctest: MoveState: close %s: %v", old, err)
	}
	if err := os.Remove(old); err != nil {
		w.t.Fatalf("proctest: MoveState: %v", err)
	}
	w.store, err = memfile.OpenOptions(path, state.Config{Agent: state.Agent{User: "proctest", Owner: "proctest:checker"}}, memfile.Options{})
	if err != nil {
		w.t.Fatalf("proctest: MoveState: open %s: %v", path, err)
	}
	w.StateURL = "file:" + path
}
