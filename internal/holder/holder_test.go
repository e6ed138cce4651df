package holder_test

import (
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/asyncstageout/aso/internal/holder"
)

// startProcess starts `sleep 60` and returns it (reaped, or killed and
// reaped, when t ends unless the test does it).
func startProcess(t *testing.T) *exec.Cmd {
	t.Helper()
	c := exec.Command("sleep", "60")
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Process.Kill(); _ = c.Wait() })
	return c
}

// idOf is the owner ID of process pid on this host, with its start time as
// this host reads it (or start, when not 0).
func idOf(t *testing.T, pid int, start uint64) string {
	t.Helper()
	self := holder.This()
	if self.Start == 0 || self.Machine == "" {
		t.Skip("no /proc: owner IDs carry no start time here")
	}
	h := holder.Holder{Host: self.Host, PID: pid, Machine: self.Machine, Start: start}
	if start == 0 {
		b, err := os.ReadFile("/proc/" + itoa(pid) + "/stat")
		if err != nil {
			t.Fatal(err)
		}
		f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
		h.Start = parseUint(t, f[19])
	}
	return h.ID("test")
}

// TestOf judges real processes: this one and a child run; a stopped child
// is stopped; an exited child (reaped or a zombie) and this process's pid
// with another start time are gone; another host, another boot or PID
// namespace and a string that is no agent ID cannot be checked.
func TestOf(t *testing.T) {
	self := holder.This()
	if h, ok := holder.Parse(holder.NewID()); !ok || h.Host != self.Host || h.PID != os.Getpid() || h.Start != self.Start || h.Machine != self.Machine {
		t.Fatalf("NewID parses to %+v, want this process %+v", h, self)
	}
	running := startProcess(t)
	stopped := startProcess(t)
	if err := stopped.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	zombie := exec.Command("true")
	if err := zombie.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = zombie.Wait() })
	zombieID := idOf(t, zombie.Process.Pid, 0) // read while it may still run
	exited := exec.Command("true")
	if err := exited.Start(); err != nil {
		t.Fatal(err)
	}
	exitedID := idOf(t, exited.Process.Pid, 0)
	if err := exited.Wait(); err != nil {
		t.Fatal(err)
	}
	waitState(t, stopped.Process.Pid, "T")
	waitState(t, zombie.Process.Pid, "Z")

	for _, c := range []struct {
		name, id string
		want     holder.State
		why      string
	}{
		{"this process", holder.NewID(), holder.Running, "runs on this host"},
		{"a running child", idOf(t, running.Process.Pid, 0), holder.Running, "runs on this host"},
		{"a stopped child", idOf(t, stopped.Process.Pid, 0), holder.Stopped, "is stopped"},
		{"a zombie", zombieID, holder.Gone, "has exited"},
		{"a reaped child", exitedID, holder.Gone, "is gone"},
		{"a reused pid", idOf(t, os.Getpid(), self.Start+1), holder.Gone, "started at another time"},
		{"another host", (holder.Holder{Host: "elsewhere.example.org", PID: os.Getpid(), Start: self.Start, Machine: self.Machine}).ID("x"), holder.Unknown, "host elsewhere.example.org"},
		{"another boot", (holder.Holder{Host: self.Host, PID: os.Getpid(), Start: self.Start, Machine: "00000000"}).ID("x"), holder.Unknown, "another boot or PID namespace"},
		{"an older ID of a live pid", self.Host + ":" + itoa(os.Getpid()) + ":cafe", holder.Running, "runs on this host"},
		{"no agent ID", "login@host:cli", holder.Unknown, "not an agent ID"},
	} {
		got := holder.Of(c.id)
		if got.State != c.want || !strings.Contains(got.Why, c.why) {
			t.Errorf("%s (%s): %v %q, want %v and %q", c.name, c.id, got.State, got.Why, c.want, c.why)
		}
		if got.TakeOver() != (c.want == holder.Gone) {
			t.Errorf("%s: TakeOver() = %v with %v: only a gone holder's lock is taken over at once", c.name, got.TakeOver(), got.State)
		}
	}
}

// waitState waits until the child pid has stopped ("T") or exited ("Z":
// not reaped yet), and checks that /proc says so. waitid reports the
// change when it happens, and WNOWAIT leaves it in place, so that the
// child's own Wait still reaps it.
func waitState(t *testing.T, pid int, st string) {
	t.Helper()
	var info unix.Siginfo
	var err error = unix.EINTR
	for errors.Is(err, unix.EINTR) {
		err = unix.Waitid(unix.P_PID, pid, &info, unix.WSTOPPED|unix.WEXITED|unix.WNOWAIT, nil)
	}
	if err != nil {
		t.Fatalf("waitid %d: %v", pid, err)
	}
	b, err := os.ReadFile("/proc/" + itoa(pid) + "/stat")
	if err != nil || strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))[0] != st {
		t.Fatalf("process %d is not in state %s: %q, %v", pid, st, b, err)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

func parseUint(t *testing.T, s string) uint64 {
	t.Helper()
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return n
}
