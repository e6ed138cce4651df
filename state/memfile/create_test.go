package memfile_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/asyncstageout/aso/state"
	"github.com/asyncstageout/aso/state/memfile"
)

// TestOpen_MissingFileIsNotCreated: without Options.Create, opening a
// missing file fails with ErrNoStore (and fs.ErrNotExist), for reading and
// writing alike, and creates neither the file nor its directory.
func TestOpen_MissingFileIsNotCreated(t *testing.T) {
	for _, o := range []memfile.Options{{}, {ReadOnly: true}, {ReadOnly: true, Create: true}} {
		path := filepath.Join(t.TempDir(), "typo", "s.aso")
		_, err := memfile.OpenOptions(path, state.Config{}, o)
		if !errors.Is(err, memfile.ErrNoStore) || !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("open %+v of a missing file: %v, want ErrNoStore", o, err)
		}
		if _, err := os.Stat(filepath.Dir(path)); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("open %+v created the directory: %v", o, err)
		}
	}
	if _, err := memfile.Check(filepath.Join(t.TempDir(), "none.aso")); !errors.Is(err, memfile.ErrNoStore) {
		t.Fatalf("Check of a missing file: %v, want ErrNoStore", err)
	}
}

// TestCreate: Create makes the file and its directory, a store that opens
// without Options.Create; a second Create leaves the file and what it
// holds as they are and says so.
func TestCreate(t *testing.T) {
	path := filepath.Join(t.TempDir(), "new", "dir", "s.aso")
	created, err := memfile.Create(path)
	if err != nil || !created {
		t.Fatalf("Create of a new file: %v, %v", created, err)
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("the new file: %v, %v; want mode 0600", fi, err)
	}
	s, err := memfile.OpenOptions(path, state.Config{Agent: state.Agent{User: "alice", Owner: "o"}}, memfile.Options{})
	if err != nil {
		t.Fatalf("open of the created file: %v", err)
	}
	ids := enqueue(t, s, 0, 2)
	s.Close()
	before, _ := os.ReadFile(path)
	created, err = memfile.Create(path)
	if err != nil || created {
		t.Fatalf("Create of an existing store: %v, %v; want not created", created, err)
	}
	if after, _ := os.ReadFile(path); string(after) != string(before) {
		t.Fatal("Create changed an existing store")
	}
	s = open(t, path, memfile.Options{ReadOnly: true})
	if ts, err := s.List(ctx, state.Filter{IDs: ids}); err != nil || len(ts) != 2 {
		t.Fatalf("after a second Create: %d transfers, %v", len(ts), err)
	}

	other := filepath.Join(t.TempDir(), "notes.txt")
	if err := os.WriteFile(other, []byte("my notes, not a store\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := memfile.Create(other); !errors.Is(err, memfile.ErrNotStateFile) {
		t.Fatalf("Create over another file: %v, want ErrNotStateFile", err)
	}
}

// TestOpen_DamageIsErrDamaged: a file whose journal record fails its
// checksum, or with a line that is not a document, fails to open with an
// error wrapping ErrDamaged, for reading and writing alike.
func TestOpen_DamageIsErrDamaged(t *testing.T) {
	flipped := filepath.Join(t.TempDir(), "s.aso")
	s := open(t, flipped, memfile.Options{})
	enqueue(t, s, 0, 3)
	enqueue(t, s, 3, 3)
	s.Close()
	flipBit(t, flipped, int64(recordOffsets(t, flipped)[0]+200))

	garbage := filepath.Join(t.TempDir(), "s.aso")
	if err := os.WriteFile(garbage, []byte(`{"aso_memfile":1}`+"\nnot json\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{flipped, garbage} {
		for _, o := range []memfile.Options{{}, {ReadOnly: true}} {
			if _, err := memfile.OpenOptions(path, state.Config{}, o); !errors.Is(err, memfile.ErrDamaged) {
				t.Errorf("open %+v of a damaged file: %v, want ErrDamaged", o, err)
			}
		}
	}
}
