package cmd_test

import (
	"bytes"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/asyncstageout/aso/cmd"
	"github.com/asyncstageout/aso/internal/busytest"
	"github.com/asyncstageout/aso/internal/proctest"
	"github.com/asyncstageout/aso/state/memfile/memfiletest"
)

// TestRun_StoreDamagedWhileRunning: damage that appears in the file store
// while aso run works on it (a record appended after the run read the
// file, with one byte changed) stops the run at its next call of the
// store: it exits 78 pointing to aso fsck, as it would have at its start,
// instead of retrying every pass until --give-up-after, and writes
// nothing more to the file.
func TestRun_StoreDamagedWhileRunning(t *testing.T) {
	w := proctest.New(t, proctest.Options{})
	w.Add("alice", proctest.Good, 5)
	p := w.StartAgent("alice")
	if !p.WaitLog("run lock taken", busytest.Scale(30*time.Second)) {
		t.Fatalf("the run did not take its lock:\n%s", p.Tail(20))
	}
	// the run has read the file; its next call of the store, whichever,
	// reads the damaged record (appended under the file's lock)
	path := strings.TrimPrefix(w.StateURL, "file:")
	memfiletest.AppendDamaged(t, path, `{"_id":"appended","type":"transfer"}`)
	damaged, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if code := p.Wait(busytest.Scale(time.Minute)); code != cmd.ExitConfig {
		t.Fatalf("exit %d, want %d once the store is damaged\n%s", code, cmd.ExitConfig, p.Tail(20))
	}
	tail := p.Tail(5)
	for _, want := range []string{"fails its checksum", "aso fsck --state file:" + path} {
		if !strings.Contains(tail, want) {
			t.Errorf("the run's last lines lack %q:\n%s", want, tail)
		}
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(after, damaged) {
		t.Fatal("the run wrote to the damaged store")
	}
}
