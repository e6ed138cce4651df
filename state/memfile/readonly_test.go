package memfile_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/asyncstageout/aso/state"
	"github.com/asyncstageout/aso/state/memfile"
	"github.com/asyncstageout/aso/state/memfile/memfiletest"
	"github.com/asyncstageout/aso/state/statetest"
)

func TestReadOnly(t *testing.T) {
	t.Run("missing file is an error and is not created", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "typo", "s.aso")
		_, err := memfile.OpenOptions(path, state.Config{}, memfile.Options{ReadOnly: true})
		if !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), "no such state file") {
			t.Fatalf("open of a missing file: %v", err)
		}
		if _, err := os.Stat(filepath.Dir(path)); !os.IsNotExist(err) {
			t.Fatalf("the directory was created: %v", err)
		}
	})
	t.Run("a file without write permission is read and never changed", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "s.aso")
		s := open(t, path, memfile.Options{})
		ids := enqueue(t, s, 0, 3)
		s.Close()
		// a torn last record, as a crash leaves it
		f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		rec := memfiletest.JournalRecord([]byte(docLine(t, state.NewTransfer(statetest.Req(statetest.Alice, 8), statetest.Start, "x"))))
		f.Write(rec[:len(rec)-20])
		f.Close()
		if err := os.Chmod(path, 0o444); err != nil {
			t.Fatal(err)
		}
		before, _ := os.ReadFile(path)
		var w warnings
		ro := open(t, path, memfile.Options{ReadOnly: true, Warn: w.add})
		got, err := ro.List(ctx, state.Filter{})
		if err != nil || len(got) != len(ids) {
			t.Fatalf("list: %d, %v", len(got), err)
		}
		if len(w.msgs) == 0 || !strings.Contains(w.msgs[0], "skipped a torn last record") {
			t.Fatalf("warnings %q", w.msgs)
		}
		_, err = ro.Enqueue(ctx, []state.Request{statetest.Req(statetest.Alice, 9)})
		if !errors.Is(err, memfile.ErrReadOnly) {
			t.Fatalf("enqueue on a read-only store: %v", err)
		}
		if _, err := statetest.Claim(ctx, ro, 1); !errors.Is(err, memfile.ErrReadOnly) {
			t.Fatalf("claim on a read-only store: %v", err)
		}
		if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
			t.Fatal("the read-only store changed the file")
		}
	})
	t.Run("an empty file is not a store and stays empty", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "s.aso")
		if err := os.WriteFile(path, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		for _, o := range []memfile.Options{{ReadOnly: true}, {}} {
			if _, err := memfile.OpenOptions(path, state.Config{}, o); !errors.Is(err, memfile.ErrNoStore) || !strings.Contains(err.Error(), path+" is an empty file") {
				t.Fatalf("open %+v of an empty file: %v, want ErrNoStore", o, err)
			}
		}
		if fi, _ := os.Stat(path); fi.Size() != 0 {
			t.Fatalf("size %d", fi.Size())
		}
		if created, err := memfile.Create(path); err != nil || !created {
			t.Fatalf("Create over an empty file: %v, %v; want a store made", created, err)
		}
		ro := open(t, path, memfile.Options{ReadOnly: true})
		if sum, err := ro.Summary(ctx, state.SummaryOptions{}); err != nil || sum.Total != 0 {
			t.Fatalf("summary %+v, %v", sum, err)
		}
	})
}
