package cmd_test

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/vt"

	"github.com/asyncstageout/aso/cmd"
	"github.com/asyncstageout/aso/fts/ftstest"
	"github.com/asyncstageout/aso/internal/proctest"
)

// A log line of the text format, whole: its level and time at the start.
var logLineRE = regexp.MustCompile(`^(INFO|WARN|ERRO|DEBU)\[\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ\] \S`)

// A line of the live display of bob's run.
var barLineRE = regexp.MustCompile(`^bob +\[[=>\-]*\] (\d+) done, (\d+) failed, (\d+) active of (\d+) claimed.* · (–|[0-9.]+)/s · ETA \S+$`)

// screen renders a byte stream as a terminal of cols columns shows it,
// and returns its lines, those scrolled off the top first.
type screen struct {
	e *vt.Emulator
}

func newScreen(rows, cols int) *screen {
	e := vt.NewEmulator(cols, rows)
	e.SetScrollbackSize(100000)
	return &screen{e: e}
}

func (s *screen) write(b []byte) { _, _ = s.e.Write(b) }

// frameStartRE is how the live display begins a frame: the cursor up over
// the last frame's live lines, then an erase to the end of the screen.
var frameStartRE = regexp.MustCompile(`\x1b\[\d+A\x1b\[J`)

// frames cuts what was read from the terminal into whole frames, each
// ending where the next one's redraw begins. A frame is one write, but a
// read of the terminal may end anywhere in it, even at the end of a line
// above the total, so a screen is only whole between frames.
func frames(chunks [][]byte) [][]byte {
	all := bytes.Join(chunks, nil)
	var out [][]byte
	prev := 0
	for _, loc := range frameStartRE.FindAllIndex(all, -1) {
		if loc[0] > prev {
			out = append(out, all[prev:loc[0]])
		}
		prev = loc[0]
	}
	return append(out, all[prev:])
}

func (s *screen) lines() []string {
	var out []string
	for _, l := range s.e.Scrollback().Lines() {
		out = append(out, strings.TrimRight(l.String(), " "))
	}
	for _, l := range strings.Split(s.e.String(), "\n") {
		out = append(out, strings.TrimRight(l, " "))
	}
	for len(out) > 0 && out[len(out)-1] == "" {
		out = out[:len(out)-1]
	}
	return out
}

// checkScreen fails unless every line of lines is a whole log line or a
// line of the live display, with at most one display line, and, while the
// run goes on (live), that line last.
func checkScreen(t *testing.T, lines []string, live bool) (bar string) {
	t.Helper()
	for i, l := range lines {
		switch {
		case l == "" || strings.HasPrefix(l, "created the file store"):
		case barLineRE.MatchString(l):
			if bar != "" {
				t.Fatalf("two display lines on the screen:\n%s\n%s\n\nscreen:\n%s", bar, l, strings.Join(lines, "\n"))
			}
			if live && i != len(lines)-1 {
				t.Fatalf("the display line is not last while the run goes on:\n%s", strings.Join(lines, "\n"))
			}
			bar = l
		case !logLineRE.MatchString(l) || len(logLineRE.FindAllStringIndex(l, -1)) != 1 ||
			strings.Contains(l[1:], "INFO[") || strings.Contains(l, " done, "):
			t.Fatalf("garbled line %d: %q\n\nscreen:\n%s", i, l, strings.Join(lines, "\n"))
		}
	}
	return bar
}

// TestProgress_OnATerminal runs an agent on a pseudo-terminal at the
// default log level and renders what it wrote as the terminal shows it:
// after every frame of the display, each line on the screen is a whole
// log line or the one line of the live display, which is last; at the end
// the display's last frame agrees with the run summary in the log.
func TestProgress_OnATerminal(t *testing.T) {
	t.Parallel()
	sites, requests, _ := localSites(t, 40)
	flag, path := stateFile(t)
	aso(t, flag, "enqueue", "-f", requests).wantCode(t, 0)
	env := []string{"ASO_STATE=file:" + path, "ASO_CONFIG=", "ASO_USER=bob", "ASO_SITES=" + sites}
	const rows, cols = 30, 1000 // wide: a log line is never wrapped
	p := onTerminalSized(t, rows, cols, env, "run", "--interval", "200ms", "--sim-transfer-time", "1s", "--max-files-per-job", "5", "--batch-size", "10")
	code, out := p.exit()
	if code != cmd.ExitOK {
		t.Fatalf("exit %d\n%s", code, out)
	}
	scr := newScreen(rows, cols)
	seenBar, summary := false, false
	for _, c := range frames(p.chunks) {
		scr.write(c)
		summary = summary || strings.Contains(string(c), "run summary")
		if len(c) == 0 || c[len(c)-1] != '\n' {
			continue
		}
		if checkScreen(t, scr.lines(), !summary) != "" {
			seenBar = true
		}
	}
	if !seenBar {
		t.Fatalf("the live display never showed:\n%s", out)
	}
	lines := scr.lines()
	bar := checkScreen(t, lines, false)
	m := barLineRE.FindStringSubmatch(bar)
	sum := ""
	for _, l := range lines {
		if strings.Contains(l, "run summary") {
			sum = l
		}
	}
	if m == nil || sum == "" {
		t.Fatalf("no final display line or no run summary:\n%s", strings.Join(lines, "\n"))
	}
	if !strings.Contains(sum, " done="+m[1]+" ") || !strings.Contains(sum, " failed="+m[2]+" ") || !strings.Contains(sum, " claimed="+m[4]+" ") || m[1] != "40" {
		t.Errorf("the display says %s done, %s failed of %s claimed; the summary: %s", m[1], m[2], m[4], sum)
	}
	if strings.Contains(out, "\r\x1b[K") {
		t.Errorf("a hand-made redraw is still written:\n%q", out)
	}
}

// TestProgress_NotATerminal: written to a file or a pipe, --progress
// always gives plain progress lines and never gives a control character;
// --progress never gives no progress line at all.
func TestProgress_NotATerminal(t *testing.T) {
	t.Parallel()
	sites, requests, _ := localSites(t, 12)
	for _, mode := range []string{"always", "never", "auto"} {
		flag := newState(t)
		aso(t, flag, "enqueue", "-f", requests).wantCode(t, 0)
		r := aso(t, flag, "--user", "bob", "--log-format", "text", "run", "--sites", sites, "--interval", "50ms", "--progress", mode).wantCode(t, 0)
		if strings.ContainsAny(r.stderr+r.stdout, "\r\x1b\b") {
			t.Errorf("--progress %s: control characters in the output:\n%q", mode, r.stderr)
		}
		got := strings.Contains(r.stderr, "progress: 12 done, 0 failed, 0 active of 12 claimed")
		if got != (mode == "always") {
			t.Errorf("--progress %s: plain progress line %v, want %v:\n%s", mode, got, mode == "always", r.stderr)
		}
	}
}

// TestProgress_OperatorCommands: enqueue, kill, retry and purge report
// their progress (plain lines with --progress always off a terminal; none
// by default), with counts that agree with their final lines.
func TestProgress_OperatorCommands(t *testing.T) {
	t.Parallel()
	flag := newState(t)
	iv := invocation{stdin: strings.NewReader(manyRequests("bob", 2500))}
	r := iv.run(t, flag, "--progress", "always", "enqueue").wantCode(t, 0)
	wantMatch(t, r.stderr, `(?m)^progress: enqueue: 1,000 records · 1,000 stored, 0 already queued, 0 rejected`)
	r = invocation{stdin: strings.NewReader(manyRequests("bob", 2500))}.run(t, flag, "enqueue").wantCode(t, 0)
	if strings.Contains(r.stderr, "progress:") {
		t.Errorf("progress lines without --progress always off a terminal:\n%s", r.stderr)
	}
	r = aso(t, flag, "--user", "bob", "--progress", "always", "kill", "--all").wantCode(t, 0)
	wantMatch(t, r.stderr, `(?m)^progress: kill: 1,000 transfers · 1,000 killed, 0 kill requested, 0 already terminal, 0 not found, 0 failed`)
	r.wantStdout(t, "2500 killed, 0 kill requested")
	ids := listIDs(t, flag, "--user", "bob", "list", "--limit", "1500")
	r = aso(t, append([]string{flag, "--user", "bob", "--progress", "always", "retry"}, ids...)...).wantCode(t, 0)
	wantMatch(t, r.stderr, `(?m)^progress: retry: 66% of 1,500 transfers · 1,000 queued again, 0 not terminal`)
	r = aso(t, flag, "--user", "bob", "--progress", "always", "purge", "--older-than", "1ns").wantCode(t, 0)
	wantMatch(t, r.stderr, `(?m)^progress: purge: 1,000 transfers · removed`)
	r.wantStdout(t, "purged 1000 terminal transfers")
	for _, s := range []string{r.stderr, r.stdout} {
		if strings.ContainsAny(s, "\r\x1b") {
			t.Errorf("control characters off a terminal:\n%q", s)
		}
	}
}

// A line of the live display of a fleet: an agent's, or the total's.
var fleetLineRE = regexp.MustCompile(`^(ann|ben|all) +\[[=>\-]*\] (\d+ agents? · )?(\d+) done, (\d+) failed, (\d+) active of (\d+) claimed`)

// TestProgress_FleetOnATerminal runs a fleet of two agents on a
// pseudo-terminal: after every frame of the display, the screen holds
// whole log lines (the fleet's and its agents') and, below them while the
// fleet runs, its live lines, the total last; at the end the total adds
// up every transfer.
func TestProgress_FleetOnATerminal(t *testing.T) {
	t.Parallel()
	w := proctest.New(t, proctest.Options{Sim: ftstest.Options{Seed: 51, QueueDelay: 200 * time.Millisecond, TransferTime: 800 * time.Millisecond}, Seed: 51})
	for _, u := range []string{"ann", "ben"} {
		w.Add(u, proctest.Good, 12)
	}
	const rows, cols = 30, 1000
	args := append(fleetArgs(w, "--max-agents", "2", "--max-files-per-job", "3"), "--progress", "auto", "--log-format", "text")
	p := onTerminalSized(t, rows, cols, []string{"ASO_CONFIG="}, args...)
	code, out := p.exit()
	if code != cmd.ExitOK {
		t.Fatalf("fleet exit %d\n%s", code, out)
	}
	scr := newScreen(rows, cols)
	agents := map[string]bool{}
	ended := false
	for _, c := range frames(p.chunks) {
		scr.write(c)
		ended = ended || strings.Contains(string(c), "fleet finished")
		if len(c) == 0 || c[len(c)-1] != '\n' {
			continue
		}
		lines := scr.lines()
		display := -1 // where the live lines start
		for i, l := range lines {
			m := fleetLineRE.FindStringSubmatch(l)
			switch {
			case m != nil:
				agents[m[1]] = true
				if display < 0 {
					display = i
				}
			case l == "":
			case !logLineRE.MatchString(l) || len(logLineRE.FindAllStringIndex(l, -1)) != 1:
				t.Fatalf("garbled line %d: %q\n\nscreen:\n%s", i, l, strings.Join(lines, "\n"))
			case display >= 0 && !ended:
				t.Fatalf("a log line below the live lines:\n%s", strings.Join(lines, "\n"))
			}
		}
		if display >= 0 && !ended && !strings.HasPrefix(lines[len(lines)-1], "all ") {
			t.Fatalf("the total is not the last line:\n%s", strings.Join(lines, "\n"))
		}
	}
	if !agents["ann"] || !agents["ben"] || !agents["all"] {
		t.Errorf("live lines seen of %v, want ann's, ben's and the total\n%s", agents, out)
	}
	var last []string
	for _, l := range scr.lines() {
		if m := fleetLineRE.FindStringSubmatch(l); m != nil && m[1] == "all" {
			last = m
		}
	}
	if last == nil || last[3] != "24" || last[4] != "0" {
		t.Errorf("the total's last frame: %q, want 24 done, 0 failed", last)
	}
}
