package chaos_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/asyncstageout/aso/internal/proctest"
)

// storageScenarios are faults of the storage: gfal-rm, and the memfile's
// own file.
func storageScenarios() []scenario {
	return []scenario{
		{
			name: "gfal-rm-fails", ci: []backend{memfile},
			prepare: func(e *env) { gfalWrapper(e, "fail") },
			run:     func(e *env) { gfalRun(e, "fail") },
		},
		{
			name: "gfal-rm-hangs", on: []backend{memfile, couch},
			prepare: func(e *env) { gfalWrapper(e, "hang") },
			run:     func(e *env) { gfalRun(e, "hang") },
		},
		{
			// The memfile's disk fills up mid-run (a tmpfs a little larger
			// than the state file), and is given room again later.
			name: "memfile-disk-full", on: []backend{memfile},
			run: diskFull,
		},
		{
			// The agent is killed, and the journal is left ending in a
			// record cut in the middle, as when the machine dies during
			// an append; the next agent must start and lose nothing.
			name: "memfile-torn-journal", on: []backend{memfile}, ci: []backend{memfile},
			run: func(e *env) {
				for range e.size.kills {
					e.w.AddMix(user, e.size.wave)
					p := e.agent()
					sleep(context.Background(), e.between(200*time.Millisecond, 1500*time.Millisecond))
					e.kill(p)
					tearJournal(e)
				}
			},
		},
		{
			// The agent is killed, and the journal's last record is cut
			// in the middle while no agent runs: the write it held is
			// gone although it was acknowledged. The exception is a
			// record of submit_sid writes: FTS may hold that job, and no
			// store can forget such a write without a second submission
			// (it is durable by contract), so such a record is left alone;
			// so is the record of the scenario's own enqueue.
			name: "memfile-truncated-journal", on: []backend{memfile},
			run: func(e *env) {
				for range e.size.kills {
					e.w.AddMix(user, e.size.wave)
					p := e.agent()
					sleep(context.Background(), e.between(200*time.Millisecond, 1500*time.Millisecond))
					e.kill(p)
					truncateJournal(e)
				}
			},
		},
	}
}

// diskFull moves the state file onto a small tmpfs, runs agents until the
// window ends, then makes room and lets the suite finish the queue.
func diskFull(e *env) {
	e.t.Helper()
	dir := filepath.Join(e.w.Dir, "small-disk")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		e.t.Fatal(err)
	}
	fi, err := os.Stat(strings.TrimPrefix(e.w.StateURL, "file:"))
	if err != nil {
		e.t.Fatal(err)
	}
	size := fi.Size() + 24<<10
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", fmt.Sprintf("size=%d", size), "tmpfs", dir).CombinedOutput(); err != nil {
		e.t.Skipf("cannot mount a small tmpfs for the full-disk scenario (needs root with CAP_SYS_ADMIN): %v: %s", err, out)
	}
	e.t.Cleanup(func() { _ = exec.Command("umount", "-l", dir).Run() })
	e.w.MoveState(dir)
	e.faults.add("disk_full", 1)
	ctx, cancel := context.WithTimeout(context.Background(), e.size.window)
	defer cancel()
	for ctx.Err() == nil {
		p := e.agent()
		select {
		case <-p.Done():
		case <-ctx.Done():
			p.Term()
		}
		e.wait(p, time.Minute)
		if strings.Contains(p.Tail(200), "no space left on device") {
			e.faults.add("enospc_run", 1)
		}
		sleep(ctx, 100*time.Millisecond)
	}
	if out, err := exec.Command("mount", "-o", "remount,size=64m", dir).CombinedOutput(); err != nil {
		e.t.Fatalf("remount %s larger: %v: %s", dir, err, out)
	}
}

// gfalWrapper installs a gfal-rm that misbehaves (mode "fail": reports
// the URL FAILED with an I/O error, as gfal-rm does, and stops; "hang":
// sleeps far past every timeout; "slow": sleeps half a second first) the
// first time it is asked to delete a URL (in mode "hang" one URL in four),
// and runs the real gfal-rm on it otherwise. It logs each call to
// DIR/gfal-calls and each misbehaviour to DIR/gfal-faults.
func gfalWrapper(e *env, mode string) {
	e.t.Helper()
	real, err := exec.LookPath("gfal-rm")
	if err != nil {
		e.t.Fatalf("gfal-rm not found (apt-get install gfal2-util-scripts gfal2-plugin-file): %v", err)
	}
	dir := e.w.Dir
	pattern := "*" // every URL
	if mode == "hang" {
		pattern = "[0-3]*" // one URL in four
	}
	action := map[string]string{
		"fail": `printf '%s\tFAILED\n' "$a"; echo "gfal-rm error: 5 (Input/output error) - chaos: storage unavailable" >&2; exit 1`,
		"hang": `exec sleep 600`,
		"slow": `sleep 0.5`,
	}[mode]
	// like gfal-rm, it works through the URLs in order, printing each
	// result as it goes, so a hang or a failure cuts the run short there;
	// the URLs between misbehaviours go to one real gfal-rm
	script := fmt.Sprintf(`#!/bin/sh
echo call >>%[1]s/gfal-calls
rc=0
flags=
for a in "$@"; do
	case "$a" in
	*://*) ;;
	--) ;;
	*) flags="$flags $a" ;;
	esac
done
group=
flush() { # the real gfal-rm on the URLs gathered so far
	[ -n "$group" ] || return 0
	%[4]s $flags -- $group
	c=$?
	group=
	case $c in
	0) ;;
	2) rc=2 ;; # MISSING: gfal-rm goes on, and exits 2 at the end
	*) exit $c ;;
	esac
}
for a in "$@"; do
	case "$a" in
	*://*) ;;
	*) continue ;;
	esac
	h=$(printf %%s "$a" | md5sum | cut -c1-20)
	m=%[1]s/gfal-marks/$h
	case $h in
	%[5]s) ;;
	*) : >"$m" ;; # not one of the URLs this storage misbehaves for
	esac
	if [ ! -e "$m" ]; then
		: >"$m"
		flush
		echo %[2]s >>%[1]s/gfal-faults
		%[3]s
	fi
	group="$group $a"
done
flush
exit $rc
`, dir, mode, action, real, pattern)
	if err := os.MkdirAll(filepath.Join(dir, "gfal-marks"), 0o755); err != nil {
		e.t.Fatal(err)
	}
	path := filepath.Join(dir, "gfal-rm-chaos")
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		e.t.Fatal(err)
	}
	e.args = append(e.args, "--gfal-rm", path, "--delete-timeout", "3s")
}

// gfalCalls is how many times the wrapper of gfalWrapper was run.
func gfalCalls(e *env) int {
	b, _ := os.ReadFile(gfalCallsPath(e))
	return bytes.Count(b, []byte("call\n"))
}

// gfalCallsPath is the file the wrapper of gfalWrapper counts its runs in.
func gfalCallsPath(e *env) string { return filepath.Join(e.w.Dir, "gfal-calls") }

// gfalRun runs agents with extra requests that must fail (so there is
// something to delete) and counts the wrapper's misbehaviours.
func gfalRun(e *env, mode string) {
	e.w.Add(user, proctest.MissingSource, e.size.wave)
	e.underFaults(func(ctx context.Context) { <-ctx.Done() })
	b, _ := os.ReadFile(filepath.Join(e.w.Dir, "gfal-faults"))
	e.faults.add("gfal-rm."+mode, strings.Count(string(b), mode+"\n"))
}

// lastRecord returns the path of the state file, and the offset and bytes
// of its last journal record (nil when it has none).
func lastRecord(e *env) (path string, at int, rec []byte) {
	e.t.Helper()
	path = strings.TrimPrefix(e.w.StateURL, "file:")
	b, err := os.ReadFile(path)
	if err != nil {
		e.t.Fatal(err)
	}
	i := bytes.LastIndex(b, []byte("\n{\"batch\":"))
	if i < 0 {
		return path, 0, nil
	}
	return path, i + 1, b[i+1:]
}

// truncateJournal cuts the state file in the middle of its last record,
// unless that record writes a submit_sid or is an enqueue.
func truncateJournal(e *env) {
	e.t.Helper()
	path, i, rec := lastRecord(e)
	if rec == nil {
		return
	}
	lines := bytes.Split(bytes.TrimSpace(rec), []byte("\n"))
	for _, l := range lines[1:] {
		var d struct {
			State     string            `json:"state"`
			SubmitSID string            `json:"submit_sid"`
			History   []json.RawMessage `json:"history"`
		}
		if json.Unmarshal(l, &d) != nil {
			continue
		}
		if d.State == "acquired" && d.SubmitSID != "" {
			e.faults.add("truncate_skipped_sid_record", 1)
			return
		}
		if d.State == "new" && len(d.History) <= 1 {
			// the scenario's own enqueue: forgetting it would lose
			// requests that nobody but the test knows about
			e.faults.add("truncate_skipped_enqueue", 1)
			return
		}
	}
	if err := os.Truncate(path, int64(i+e.intn(1, len(rec)-2))); err != nil {
		e.t.Fatal(err)
	}
	e.faults.add("truncated_record", 1)
}

// tearJournal appends the first part of a copy of the state file's last
// record: a record torn by a crash during its append, never acknowledged.
func tearJournal(e *env) {
	e.t.Helper()
	path, _, rec := lastRecord(e)
	if rec == nil {
		return
	}
	cut := rec[:e.intn(1, len(rec)-2)]
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		e.t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(cut); err != nil {
		e.t.Fatal(err)
	}
	e.faults.add("torn_record", 1)
}
